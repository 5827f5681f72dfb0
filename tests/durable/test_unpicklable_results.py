"""A tool value pickle refuses never fails a durable run after the tool's side effect: the value
is checkpointed in its JSON form and the run goes on (a failed run would redo the effect)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from agentensemble.durable._steps import checkpointable
from agentensemble.tools import ToolResult

APP = Path(__file__).with_name("_unpicklable_app.py")


def test_a_tool_value_that_cannot_be_pickled_does_not_fail_the_run(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    done = subprocess.run(
        [sys.executable, str(APP), db, str(tmp_path), "booking-1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout.strip().splitlines()[-1])
    assert output["raw"] == "The room is booked"
    assert output["structured"]["room"] == 7
    assert output["structured"]["lock"].startswith("<unlocked _thread.lock")
    assert (tmp_path / "effects.log").read_text() == "booked\n"  # once


def test_only_the_fields_pickle_refuses_are_replaced() -> None:
    fine = ToolResult.success("ok", structured_output={"a": [1, 2]})
    assert checkpointable(fine, "tool:t") is fine
    odd = ToolResult.success("ok", structured_output=(x for x in ()))  # a generator
    kept = checkpointable(odd, "tool:t")
    assert kept.output == "ok" and isinstance(kept.structured_output, str)
    assert "generator" in kept.structured_output
