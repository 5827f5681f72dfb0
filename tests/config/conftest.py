"""Crew files in a temporary folder, with a tools module beside them."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TOOLS_MODULE = '''
from pydantic import BaseModel

from agentensemble import GuardrailResult, tool


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


class Verdict(BaseModel):
    ok: bool


def always_fails(output):
    return GuardrailResult.failure("never good enough")


NOT_A_TOOL = 42
'''


@pytest.fixture
def crew_file(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Write a crew file (and ``yaml_tools.py`` beside it); yields a function text -> path."""
    (tmp_path / "yaml_tools.py").write_text(TOOLS_MODULE)

    def write(text: str, name: str = "crew.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    yield write
    sys.modules.pop("yaml_tools", None)
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))
