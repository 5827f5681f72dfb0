"""Saving outputs as JSON cleans each part once, with exactly the result of cleaning every level.

Each nested model (a task's output in a run's, a model turn in a trace) used to clean its part
and its parent all of it again. Now the outermost model being saved cleans everything, once. The
saved texts of ``tests/_saveable_golden.py`` were made by the code before the change.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _saveable_golden import SAVED
from _saveable_shapes import shapes

from agentensemble import Agent, Ensemble, Task, TaskOutput, _saveable, tool
from agentensemble.testing import ScriptedChatModel, tool_call


@pytest.mark.parametrize("name", sorted(SAVED))
def test_every_shape_is_saved_exactly_as_before(name: str) -> None:
    model = shapes()[name]
    assert model.model_dump_json() == SAVED[name]
    assert model.model_dump(mode="json") == json.loads(SAVED[name])


class _EveryLevelCleans:
    """Stands in for the flag: every model believes it is the outermost (the old behaviour)."""

    def get(self) -> bool:
        return False

    def set(self, value: bool) -> None:
        return None

    def reset(self, token: Any) -> None:
        return None


def test_a_real_runs_output_and_trace_save_as_when_every_level_cleaned_its_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @tool
    def list_files(folder: str) -> dict[str, Any]:
        """List a folder."""
        return {"folder": folder, "files": ["caf\udce9.txt", "zero\u200bwidth"], "n": 2}

    calls = [tool_call("list_files", {"folder": f"f{n} \ud800"}) for n in range(5)]
    model = ScriptedChatModel([*calls, "done \ud800 sk-proj-Abcdefghijklmnop0123456789QRST"])
    agent = Agent(role="Clerk", goal="List {what}", tools=[list_files], llm=model)
    task = Task(description="List every folder of {what}", agent=agent)
    output = Ensemble(tasks=[task], capture="full").run({"what": "caf\udce9"})
    assert output.trace is not None and output.trace.tasks[0].model_turns

    once = output.model_dump_json(), output.model_dump(mode="json"), output.trace.to_json()
    monkeypatch.setattr(_saveable, "_cleaning", _EveryLevelCleans())
    monkeypatch.setattr(_saveable, "_scrubbed", _saveable.scrub)
    every_level = output.model_dump_json(), output.model_dump(mode="json"), output.trace.to_json()
    assert once == every_level
    assert "\ud800" not in once[0] and "\ufffd" in once[0]


def test_the_python_objects_and_python_dumps_are_untouched() -> None:
    odd = shapes()["odd"]
    odd.model_dump_json()
    assert odd.raw.startswith("done \ud800")
    assert odd.model_dump()["task_description"] == "Read caf\udce9.txt"


def test_a_save_that_fails_leaves_the_next_save_cleaned() -> None:
    # a lone surrogate in a dict key of ``parsed`` is not saveable (as before this change);
    # the failure must not leave the next model believing it is inside another one
    broken = TaskOutput(raw="x", parsed={"k\ud800": 1}, task_description="d", agent_role="r")
    with pytest.raises(ValueError):
        broken.model_dump_json()
    fine = TaskOutput(raw="y \ud800", task_description="d", agent_role="r")
    assert json.loads(fine.model_dump_json())["raw"] == "y \ufffd"
