"""A run whose outputs hold a lone surrogate in a dict key (a file name from a tool, a key a
model wrote) finishes and saves: its result used to fail to save after every step had run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos")

APP = Path(__file__).with_name("_surrogate_keys_app.py")


def _run(tmp_path: Path) -> dict[str, object]:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    done = subprocess.run(
        [sys.executable, str(APP), db, str(tmp_path), "listing-1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_run_with_surrogate_keys_completes_and_its_result_is_kept(tmp_path: Path) -> None:
    first = _run(tmp_path)
    (task,) = first["task_outputs"]  # type: ignore[misc]
    assert task["parsed"] == {"caf\ufffd.txt": 3}
    assert task["tool_calls"][0]["structured_output"] == {"caf\ufffd.txt": 3}
    assert _run(tmp_path) == first  # the same run again: its saved result, no step rerun
    assert (tmp_path / "effects.log").read_text() == "listed\n"
