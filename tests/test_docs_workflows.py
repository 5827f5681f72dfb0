"""Every Python block of docs/workflows.md runs as written (offline, scripted models)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agentensemble

DOC = Path(agentensemble.__file__).absolute().parent.parent / "docs" / "workflows.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_guide_has_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_each_example_runs(index: int) -> None:
    exec(compile(BLOCKS[index], f"{DOC}:block{index + 1}", "exec"), {"__name__": "__doc__"})
