"""OpenTelemetry spans from a run's events (SDK in-memory exporter): GenAI names and
attributes, parents right across worker threads and concurrent runs, errors on spans, and no
OpenTelemetry import at all unless the listener is used."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agentensemble import Agent, Ensemble, Task, TaskExecutionError, tool
from agentensemble.otel import OpenTelemetryListener
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    yield InMemorySpanExporter()


def listener_for(exporter: InMemorySpanExporter) -> OpenTelemetryListener:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OpenTelemetryListener(tracer_provider=provider)


@tool
def lookup(city: str) -> str:
    """Weather of a city (sync: runs in a worker thread)."""
    return f"Sunny in {city}"


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_a_run_becomes_a_tree_of_genai_spans(exporter: InMemorySpanExporter) -> None:
    model = ScriptedChatModel([tool_call("lookup", {"city": "Oslo"}), "Sunny"])
    agent = Agent(role="Forecaster", goal="g", tools=[lookup])
    ensemble = Ensemble(
        tasks=[Task(description="Forecast")],
        agents=[],
        llm=model,
        listeners=[listener_for(exporter)],
    )
    ensemble.tasks[0].agent = agent

    output = ensemble.run()

    spans = exporter.get_finished_spans()
    names = sorted(s.name for s in spans)
    assert names == sorted(
        [
            "invoke_workflow agentensemble",
            "invoke_agent Forecaster",
            "chat scripted",
            "chat scripted",
            "execute_tool lookup",
        ]
    )
    named = by_name(spans)
    run, task, tool_span = (
        named["invoke_workflow agentensemble"],
        named["invoke_agent Forecaster"],
        named["execute_tool lookup"],
    )
    chats = [s for s in spans if s.name == "chat scripted"]
    assert parent_of(task) == run.context.span_id
    assert {parent_of(c) for c in chats} == {task.context.span_id}
    assert parent_of(tool_span) == task.context.span_id
    assert run.attributes["agentensemble.run_id"] == output.run_id  # type: ignore[index]
    assert task.attributes["gen_ai.operation.name"] == "invoke_agent"  # type: ignore[index]
    chat = chats[0].attributes or {}
    assert (chat["gen_ai.operation.name"], chat["gen_ai.request.model"]) == ("chat", "scripted")
    assert chat["gen_ai.usage.input_tokens"] > 0 and chat["gen_ai.usage.output_tokens"] > 0
    attributes = tool_span.attributes or {}
    assert (attributes["gen_ai.operation.name"], attributes["gen_ai.tool.name"]) == (
        "execute_tool",
        "lookup",
    )
    assert all(s.status.status_code is not StatusCode.ERROR for s in spans)


@pytest.mark.anyio
async def test_concurrent_runs_keep_their_own_span_trees(exporter: InMemorySpanExporter) -> None:
    barrier = threading.Barrier(2, timeout=30)

    @tool
    def meet(tag: str) -> str:
        """Wait until both runs are inside their tool."""
        barrier.wait()
        return tag

    def answer(messages: list[dict[str, Any]], tools: Any) -> Any:
        if messages[-1]["role"] == "tool":
            return "done"
        tag = str(messages[-1]["content"]).split("run ")[1].split()[0]
        return tool_call("meet", {"tag": tag})

    ensemble = Ensemble(
        tasks=[Task(description="Join run {tag}", agent=Agent(role="A", goal="g", tools=[meet]))],
        llm=FunctionChatModel(answer),
        listeners=[listener_for(exporter)],
    )

    one, two = await asyncio.gather(ensemble.arun({"tag": "one"}), ensemble.arun({"tag": "two"}))

    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}

    def root_run_id(span: ReadableSpan) -> Any:
        while span.parent is not None:
            span = by_id[span.parent.span_id]
        return (span.attributes or {})["agentensemble.run_id"]

    tools = [s for s in spans if s.name == "execute_tool meet"]
    assert len(tools) == 2 and len({s.context.trace_id for s in tools}) == 2
    for span in spans:
        assert root_run_id(span) == span.attributes["agentensemble.run_id"]  # type: ignore[index]
    assert {root_run_id(s) for s in tools} == {one.run_id, two.run_id}


def test_a_failure_is_recorded_on_the_spans(exporter: InMemorySpanExporter) -> None:
    ensemble = Ensemble(
        tasks=[Task(description="Say it")],
        llm=ScriptedChatModel([]),
        listeners=[listener_for(exporter)],
    )

    with pytest.raises(TaskExecutionError):
        ensemble.run()

    named = by_name(exporter.get_finished_spans())
    for name in ("invoke_workflow agentensemble", "invoke_agent Assistant", "chat scripted"):
        span = named[name]
        assert span.status.status_code is StatusCode.ERROR, name
        assert (span.attributes or {})["error.type"] in {
            "ScriptExhaustedError",
            "TaskExecutionError",
        }
    assert named["chat scripted"].events[0].name == "exception"


RUN_WITHOUT_OTEL = """
import sys
from agentensemble import Ensemble, Task
from agentensemble.testing import ScriptedChatModel
Ensemble(tasks=[Task(description="Hi")], llm=ScriptedChatModel(["hello"])).run()
print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
"""

BLOCKED = """
import sys
sys.modules["opentelemetry"] = None  # as if the extra were not installed
try:
    import agentensemble.otel
except ImportError as error:
    print(error)
"""


def test_without_the_listener_nothing_about_opentelemetry_is_imported() -> None:
    result = subprocess.run(
        [sys.executable, "-c", RUN_WITHOUT_OTEL], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_without_the_extra_the_listener_says_how_to_install_it() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCKED], capture_output=True, text=True, timeout=60
    )
    assert 'pip install "agentensemble-py[otel]"' in result.stdout


def test_a_delegation_is_an_agent_span_holding_the_workers_own_calls(
    exporter: InMemorySpanExporter,
) -> None:
    from agentensemble import Workflow

    manager = ScriptedChatModel(
        [
            tool_call("delegate_task", {"agent_role": "Researcher", "instructions": "Find facts"}),
            "Final report",
        ]
    )
    researcher = Agent(role="Researcher", goal="Find facts", llm=ScriptedChatModel(["facts"]))
    ensemble = Ensemble(
        tasks=[Task(description="Write a report")],
        agents=[researcher],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=manager,
        listeners=[listener_for(exporter)],
    )

    ensemble.run()

    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    worker = next(s for s in spans if s.name == "invoke_agent Researcher")
    assert (worker.attributes or {})["agentensemble.delegated_by"] == "Manager"
    worker_chats = [
        s
        for s in spans
        if s.name.startswith("chat") and (s.attributes or {})["gen_ai.agent.name"] == "Researcher"
    ]
    assert len(worker_chats) == 1
    assert worker_chats[0].parent is not None
    assert worker_chats[0].parent.span_id == worker.context.span_id
    assert worker.parent is not None
    assert by_id[worker.parent.span_id].name.startswith("invoke_agent")  # the manager's task


def test_the_exported_exception_event_is_redacted_like_the_status(
    exporter: InMemorySpanExporter,
) -> None:
    from agentensemble.logging import register_secret

    registered = "registered-otel-secret-0042"
    register_secret(registered)
    key = "sk-live-0123456789abcdefOTEL"

    def failing(messages: object, tools: object) -> object:
        raise RuntimeError(f"provider echoed {registered} and {key}")

    ensemble = Ensemble(
        tasks=[Task(description="Say it")],
        llm=FunctionChatModel(failing),  # type: ignore[arg-type]
        listeners=[listener_for(exporter)],
    )
    with pytest.raises(TaskExecutionError):
        ensemble.run()

    spans = exporter.get_finished_spans()
    events = [event for span in spans for event in span.events if event.name == "exception"]
    assert events, "the failure is recorded as an exception event"
    exported = repr(
        [
            (
                span.status.description,
                dict(span.attributes or {}),
                *(dict(event.attributes or {}) for event in span.events),
            )
            for span in spans
        ]
    )
    assert "provider echoed" in exported
    assert registered not in exported and key not in exported
    assert all("exception.stacktrace" in (event.attributes or {}) for event in events)
