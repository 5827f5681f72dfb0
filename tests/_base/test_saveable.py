"""Saving outputs as JSON cleans each part once, with exactly the result of cleaning every level.

Each nested model (a task's output in a run's, a model turn in a trace) used to clean its part
and its parent all of it again. Now the outermost model being saved cleans everything, once. The
saved texts of ``tests/_base/_saveable_golden.py`` were made by the code before the change.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from _saveable_golden import SAVED
from _saveable_shapes import shapes

from agentensemble import Agent, Ensemble, Task, TaskOutput, _saveable, tool
from agentensemble._base.saveable import jsonable
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


def _walked(data: Any) -> tuple[Any, bool]:
    """``_scrubbed_seen`` as every level did it: always the walk, no encoder check first."""
    lossy: list[str] = []
    return _saveable._scrub_noting(data, lossy), bool(lossy)


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
    monkeypatch.setattr(_saveable, "_scrubbed_seen", _walked)
    every_level = output.model_dump_json(), output.model_dump(mode="json"), output.trace.to_json()
    assert once == every_level
    assert "\ud800" not in once[0] and "\ufffd" in once[0]


def test_the_python_objects_and_python_dumps_are_untouched() -> None:
    odd = shapes()["odd"]
    odd.model_dump_json()
    assert odd.raw.startswith("done \ud800")
    assert odd.model_dump()["task_description"] == "Read caf\udce9.txt"


def test_a_save_that_fails_leaves_the_next_save_cleaned(monkeypatch: pytest.MonkeyPatch) -> None:
    # a lone surrogate in a dict key of ``parsed`` used to fail the save; now it is cleaned, so
    # a cleaning that fails stands in for a save that fails
    def fail(model: Any, handler: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(_saveable, "_keys_cleaned_json", fail)
    broken = TaskOutput(raw="x", parsed={"k\ud800": 1}, task_description="d", agent_role="r")
    with pytest.raises(ValueError, match="boom"):
        broken.model_dump_json()
    fine = TaskOutput(raw="y \ud800", task_description="d", agent_role="r")
    assert json.loads(fine.model_dump_json())["raw"] == "y \ufffd"


def _keys(data: Any) -> list[str]:
    if isinstance(data, dict):
        return [*data, *(key for item in data.values() for key in _keys(item))]
    if isinstance(data, list):
        return [key for item in data for key in _keys(item)]
    return []


@pytest.mark.parametrize("name", ["keyed", "typed_keys", "keys", "odd", "clean_run"])
def test_a_lone_surrogate_in_a_dict_key_is_one_replacement_character_as_in_values(
    name: str,
) -> None:
    model = shapes()[name]
    saved = json.loads(model.model_dump_json())
    assert saved == model.model_dump(mode="json")
    replaced = [key for key in _keys(saved) if "\ufffd" in key]
    assert replaced and all(key.count("\ufffd") == 1 for key in replaced)
    assert type(model).model_validate_json(model.model_dump_json()) is not None


def test_a_typed_key_is_one_replacement_character_beside_a_lone_surrogate_in_a_value() -> None:
    run = shapes()["typed_keys"].model_copy(update={"raw": "done \ud800"})
    saved = json.loads(run.model_dump_json())
    assert saved["raw"] == "done \ufffd"
    assert list(saved["tool_metrics"]) == ["tool\ufffd"] and list(saved["loops"]) == ["l\ufffd"]
    assert list(saved["graphs"]["g\ufffd"]["outputs"]) == ["a\ufffd"]


def test_a_key_with_a_lone_surrogate_stays_in_the_python_objects_and_dumps() -> None:
    keyed = shapes()["keyed"]
    keyed.model_dump_json()
    assert list(keyed.parsed) == ["k\ud800", "ok"]
    assert keyed.model_dump()["tool_calls"][0]["structured_output"] == {
        "name\udce9": {"n\ud800": 1}
    }


def test_jsonable_cleans_keys_inside_dicts_lists_models_and_dataclasses() -> None:
    @dataclasses.dataclass
    class Box:
        found: dict[str, Any]

    inner = TaskOutput(raw="r", parsed={"p\ud800": 1}, task_description="d", agent_role="r")
    value = {"k\ud800": [Box({"x\udce9": ("t\ud800",)})], "model": inner, 3: {"v": "\ud800"}}
    assert jsonable(value) == {
        "k\ufffd": [{"found": {"x\ufffd": ["t\ufffd"]}}],
        "model": json.loads(inner.model_dump_json()),
        "3": {"v": "\ufffd"},
    }
    assert list(value) == ["k\ud800", "model", 3]  # the objects are untouched


def test_a_real_run_whose_tool_and_parsed_output_have_surrogate_keys_saves() -> None:
    @tool
    def list_files(folder: str) -> dict[str, Any]:
        """List a folder."""
        return {"caf\udce9.txt": 3, folder: {"n\ud800": 1}}

    model = ScriptedChatModel([tool_call("list_files", {"folder": "f"}), '{"caf\\udce9.txt": 3}'])
    agent = Agent(role="Clerk", goal="List", tools=[list_files], llm=model)
    task = Task(description="List the folder", agent=agent, output_type=dict[str, int])
    output = Ensemble(tasks=[task], capture="full").run()
    assert output.parsed == {"caf\udce9.txt": 3}
    saved = json.loads(output.model_dump_json())
    assert saved["task_outputs"][0]["parsed"] == {"caf\ufffd.txt": 3}
    structured = saved["task_outputs"][0]["tool_calls"][0]["structured_output"]
    assert structured == {"caf\ufffd.txt": 3, "f": {"n\ufffd": 1}}
    assert output.trace is not None and "\ud800" not in output.trace.to_json()
    assert saved == output.model_dump(mode="json")
