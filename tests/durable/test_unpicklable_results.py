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


class _Counted:
    """Counts how often it is pickled."""

    pickled = 0

    def __init__(self, text: str) -> None:
        self.text = text

    def __reduce__(self) -> tuple[object, tuple[str]]:
        type(self).pickled += 1
        return _Counted, (self.text,)


def test_a_step_result_is_pickled_once_and_its_checkpoint_reads_back_as_the_result() -> None:
    import pickle

    from agentensemble.durable._steps import _Pickled, _pickled_once

    value = ToolResult.success("ok", structured_output={"made": _Counted("x")})
    wrapped = _pickled_once(value, "tool:t")
    assert isinstance(wrapped, _Pickled) and wrapped.value is value
    assert _Counted.pickled == 1
    stored = pickle.dumps(wrapped)  # what DBOS's serializer does with a step's result
    assert _Counted.pickled == 1  # the bytes made by the check, copied: not pickled again
    back = pickle.loads(stored)  # a replay, any reader of the row: the result, not the wrapper
    assert type(back) is ToolResult and back.output == "ok"
    assert type(back.structured_output["made"]) is _Counted
    assert back.structured_output["made"].text == "x"
    # what pickle refuses still falls back to the JSON form, unwrapped
    odd = ToolResult.success("ok", structured_output=(x for x in ()))
    kept = _pickled_once(odd, "tool:t")
    assert type(kept) is ToolResult and isinstance(kept.structured_output, str)
