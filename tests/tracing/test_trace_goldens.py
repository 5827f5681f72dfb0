"""The trace of several run shapes, as JSON, against goldens recorded before the recorder was
made cheaper: ids, timestamps and durations normalised, every other byte the same. Regenerate
(only on purpose, when the trace changes) with ``AE_WRITE_TRACE_GOLDENS=1``."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble import (
    Agent,
    Ensemble,
    ExecutionTrace,
    Task,
    TaskExecutionError,
    Workflow,
    tool,
)
from agentensemble.logging import register_secret
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call
from agentensemble_review import Continue, Edit, ScriptedReviewHandler

GOLDENS = Path(__file__).parent / "goldens"
SECRET = "sk-golden-test-0123456789abcdef"
_TIMES = re.compile(r"(_at|^at)$")
_DURATIONS = re.compile(r"(_seconds)$")
_IDS = {"run_id", "parent_run_id", "call_id", "id", "tool_call_id"}


def _normalised(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _normalised(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v, key) for v in value]
    if value is None:
        return None
    if _TIMES.search(key):
        assert isinstance(value, str) and value.endswith("Z"), (key, value)
        return "<time>"
    if _DURATIONS.search(key):
        assert isinstance(value, (int, float)) and value >= 0, (key, value)
        return "<seconds>"
    if key in _IDS and isinstance(value, str):
        return "<id>"
    return value


@tool
def lookup(city: str) -> str:
    """Look up the weather of a city."""
    return f"Sunny in {city} {SECRET}"


@tool
def broken(city: str) -> str:
    """Always fails."""
    raise RuntimeError(f"no weather for {city} ({SECRET})")


@tool(requires_approval=True)
def send(to: str) -> str:
    """Send the report."""
    return f"sent to {to}"


class Forecast(BaseModel):
    city: str
    degrees: int


def _tools_and_review() -> ExecutionTrace | None:
    agent = Agent(role="Forecaster", goal="Forecast for {city}", tools=[lookup, send])
    task = Task(description="Forecast {city}", expected_output="One line", agent=agent, name="fc")
    model = ScriptedChatModel(
        [tool_call("lookup", {"city": "Oslo"}), tool_call("send", {"to": "ann"}), "Done " + SECRET]
    )
    reviewer = ScriptedReviewHandler([Edit('{"to": "bob"}')])
    ensemble = Ensemble(tasks=[task], llm=model, review_handler=reviewer)  # type: ignore[arg-type]
    return ensemble.run({"city": "Oslo"}).trace


def _failing_tool(capture: str = "standard") -> ExecutionTrace | None:
    agent = Agent(role="Forecaster", goal="Forecast", tools=[broken])
    tasks = [Task(description="Forecast Rome", agent=agent), Task(description="Then summarise")]
    model = ScriptedChatModel([tool_call("broken", {"city": "Rome"}), "could not tell", "summary"])
    return Ensemble(tasks=tasks, llm=model, capture=capture).run().trace  # type: ignore[arg-type]


def _failed_run() -> ExecutionTrace | None:
    model = ScriptedChatModel(["first answer"])
    ensemble = Ensemble(tasks=[Task(description="One"), Task(description="Two")], llm=model)
    with pytest.raises(TaskExecutionError) as caught:
        ensemble.run()
    return caught.value.trace


def _structured() -> ExecutionTrace | None:
    task = Task(description="Forecast Oslo as data", output_type=Forecast)
    model = ScriptedChatModel(['{"city": "Oslo", "degrees": 21}'])
    return Ensemble(tasks=[task], llm=model).run().trace


def _parallel() -> ExecutionTrace | None:
    def answer(messages: list[dict[str, Any]], tools: Any) -> Any:
        if messages[-1]["role"] == "tool":
            return f"done: {messages[-1]['content']}"
        city = "Oslo" if "Oslo" in str(messages[-1]["content"]) else "Rome"
        return tool_call("lookup", {"city": city})

    tasks = [
        Task(
            description=f"Visit {city}", agent=Agent(role=f"{city} guide", goal="g", tools=[lookup])
        )
        for city in ("Oslo", "Rome")
    ]
    ensemble = Ensemble(tasks=tasks, llm=FunctionChatModel(answer), workflow=Workflow.PARALLEL)
    trace = ensemble.run().trace
    if trace is not None:  # finishing order is the threads' business: compare by index
        trace.tasks.sort(key=lambda t: t.index)
    return trace


def _full_capture() -> ExecutionTrace | None:
    agent = Agent(role="Forecaster", goal="Forecast", tools=[lookup])
    model = ScriptedChatModel([tool_call("lookup", {"city": "Oslo"}), "Sunny"])
    task = Task(description=f"Forecast Oslo with key {SECRET}", agent=agent)
    reviewer = ScriptedReviewHandler([Continue()])
    ensemble = Ensemble(tasks=[task], llm=model, capture="full", review_handler=reviewer)
    return ensemble.run({"city": "Oslo"}).trace


SHAPES = {
    "tools_and_review": _tools_and_review,
    "failing_tool": _failing_tool,
    "failing_tool_full": lambda: _failing_tool("full"),
    "failed_run": _failed_run,
    "structured": _structured,
    "parallel": _parallel,
    "full_capture": _full_capture,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_trace_of_each_run_shape_matches_its_golden(shape: str) -> None:
    register_secret(SECRET)
    trace = SHAPES[shape]()
    assert trace is not None
    assert SECRET not in trace.to_json()
    dumped = _normalised(trace.model_dump(mode="json"))
    written = _normalised(json.loads(trace.to_json()))
    assert dumped == written
    assert ExecutionTrace.from_json(trace.to_json()) == trace
    golden = GOLDENS / f"{shape}.json"
    if os.environ.get("AE_WRITE_TRACE_GOLDENS") == "1":
        golden.write_text(json.dumps(dumped, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    assert dumped == json.loads(golden.read_text(encoding="utf-8"))
