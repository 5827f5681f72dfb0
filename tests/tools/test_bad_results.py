"""A tool's odd result fails at most its own call, and a finished run can always be saved.

Attacks: a tool returned a set or an object of its own class, kept as ``structured_output``,
and ``EnsembleOutput.model_dump_json()`` raised; ``ToolResult.success(42)`` failed the whole
task with an opaque pydantic error; a lone surrogate (``os.listdir`` on a badly named file, or
``"\\ud800"`` in the model's JSON) in an output made the dump raise too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentensemble import (
    AbstractAgentTool,
    Agent,
    AgentTool,
    Ensemble,
    EnsembleOutput,
    Task,
    ToolResult,
    tool,
)
from agentensemble.testing import ScriptedChatModel, tool_call


class Custom:
    def __init__(self) -> None:
        self.secret_sauce = 1

    def __str__(self) -> str:
        return "Custom(1)"


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")

    __repr__ = __str__


def circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def run_with(value_factory: Any, *, answer: str = "done") -> EnsembleOutput:
    @tool
    def produce() -> Any:
        """Produce a value."""
        return value_factory()

    model = ScriptedChatModel([tool_call("produce", {}), answer])
    agent = Agent(role="Maker", goal="Make", tools=[produce], llm=model)
    return Ensemble(tasks=[Task(description="Make it", agent=agent)]).run()


@pytest.mark.parametrize(
    "factory",
    [lambda: {1, 2}, Custom, lambda: {"nested": Custom()}, lambda: b"\xff\xfe", Unprintable],
    ids=["set", "custom class", "nested custom", "bytes", "unprintable"],
)
def test_whatever_a_tool_returns_the_run_can_be_saved_as_json(factory: Any) -> None:
    output = run_with(factory)
    saved = json.loads(output.model_dump_json())
    assert saved["raw"] == "done"
    assert len(saved["task_outputs"][0]["tool_calls"]) == 1


def test_an_object_that_cannot_become_json_fails_its_call_with_a_message_naming_its_type() -> None:
    output = run_with(circular)
    (record,) = output.task_outputs[0].tool_calls
    assert not record.is_success
    assert "list" in record.output and "cannot be sent" in record.output
    json.loads(output.model_dump_json())


class BadResult(AbstractAgentTool):
    name = "bad"
    description = "Returns a malformed ToolResult"

    def __init__(self, make: Any) -> None:
        self.make = make

    def do_execute(self, input: str) -> ToolResult:
        result: ToolResult = self.make()
        return result


class PlainBadResult(AgentTool):
    name = "bad"
    description = "A plain AgentTool returning a malformed ToolResult"

    def __init__(self, make: Any) -> None:
        self.make = make

    def execute(self, input: str) -> ToolResult:
        result: ToolResult = self.make()
        return result


MALFORMED = [
    (lambda: ToolResult.success(42), "output must be a str, got int 42"),  # type: ignore[arg-type]
    (lambda: ToolResult(output=["a"]), "output must be a str, got list"),  # type: ignore[arg-type]
    (lambda: ToolResult.failure(None), "failure(error_message) takes the str"),  # type: ignore[arg-type]
    (lambda: ToolResult(is_success="yes"), "is_success must be a bool"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("shape", [BadResult, PlainBadResult], ids=["instrumented", "plain"])
@pytest.mark.parametrize(("make", "message"), MALFORMED, ids=["42", "list", "None", "yes"])
def test_a_malformed_tool_result_fails_only_its_call_saying_what_was_wrong(
    shape: Any, make: Any, message: str
) -> None:
    model = ScriptedChatModel([tool_call("bad", {"input": "x"}), "recovered"])
    agent = Agent(role="Maker", goal="Make", tools=[shape(make)], llm=model)
    output = Ensemble(tasks=[Task(description="Make it", agent=agent)]).run()
    assert output.raw == "recovered"
    (record,) = output.task_outputs[0].tool_calls
    assert not record.is_success
    assert message in record.output


def test_lone_surrogates_anywhere_in_a_run_do_not_stop_it_being_saved() -> None:
    @tool
    def list_files() -> list[str]:
        """List the files."""
        return ["caf\udce9.txt"]  # what os.listdir gives for a Latin-1 name on a UTF-8 system

    model = ScriptedChatModel(
        [tool_call("list_files", {}), tool_call("list_files", '{"x": "\\ud800"}'), "\ud800 done"]
    )
    agent = Agent(role="Clerk", goal="List", tools=[list_files], llm=model)
    output = Ensemble(tasks=[Task(description="List", agent=agent)]).run()
    assert output.raw == "\ud800 done"  # the Python object is untouched
    saved = json.loads(output.model_dump_json())
    assert saved["raw"] == "\ufffd done"
    first, second = saved["task_outputs"][0]["tool_calls"]
    assert first["structured_output"] == ["caf\ufffd.txt"]
    assert "\ufffd" in second["arguments"] or "\\ud800" in second["arguments"]


def test_the_trace_of_such_a_run_can_be_saved_and_loaded_back(tmp_path: Any) -> None:
    from agentensemble.tracing.trace import ExecutionTrace

    @tool
    def produce() -> Any:
        """Produce odd values."""
        return {"custom": Custom(), "set": {1}, "name": "caf\udce9"}

    model = ScriptedChatModel([tool_call("produce", {}), "done \ud800"])
    agent = Agent(role="Maker", goal="Make", tools=[produce], llm=model)
    task = Task(description="Make it \ud800 for {who}", agent=agent)
    output = Ensemble(tasks=[task], capture="full").run({"who": Custom()})
    assert output.trace is not None
    loaded = ExecutionTrace.from_json(output.trace.save(tmp_path / "trace.json").read_text())
    assert loaded.run_id == output.trace.run_id
    assert "\ufffd" in loaded.to_json() or "\\ufffd" in loaded.to_json()
