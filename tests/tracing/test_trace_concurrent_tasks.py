"""Concurrent tasks (Workflow.PARALLEL) each get their own model turns, tool calls and metrics
in the trace, and their own spans in OpenTelemetry: attribution follows the task, not the
thread or the order events arrive in. The barrier proves both tasks' tools ran at once."""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentensemble import Agent, Ensemble, Task, Workflow, tool
from agentensemble.otel import OpenTelemetryListener
from agentensemble.testing import FunctionChatModel, tool_call


def concurrent_ensemble(listeners: list[Any]) -> Ensemble:
    barrier = threading.Barrier(2, timeout=30)

    @tool
    def meet(city: str) -> str:
        """Wait until both tasks are inside this tool, then answer for the city."""
        barrier.wait()
        return f"met in {city}"

    def answer(messages: list[dict[str, Any]], tools: Any) -> Any:
        if messages[-1]["role"] == "tool":
            return f"done: {messages[-1]['content']}"
        city = "Oslo" if "Oslo" in str(messages[-1]["content"]) else "Rome"
        return tool_call("meet", {"city": city})

    model = FunctionChatModel(answer)
    tasks = [
        Task(description=f"Visit {city}", agent=Agent(role=f"{city} guide", goal="g", tools=[meet]))
        for city in ("Oslo", "Rome")
    ]
    return Ensemble(tasks=tasks, llm=model, workflow=Workflow.PARALLEL, listeners=listeners)


def test_concurrent_tasks_each_keep_their_own_turns_and_tool_calls() -> None:
    output = concurrent_ensemble([]).run()

    trace = output.trace
    assert trace is not None and trace.workflow == "parallel"
    by_role = {task.agent_role: task for task in trace.tasks}
    for city in ("Oslo", "Rome"):
        task = by_role[f"{city} guide"]
        assert [c.output for c in task.tool_calls] == [f"met in {city}"]
        assert len(task.model_turns) == 2
        assert {t.agent_role for t in task.model_turns} == {f"{city} guide"}
        assert task.output == f"done: met in {city}"
        assert task.metrics.tool_seconds > 0


def test_concurrent_tasks_get_their_own_spans() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    concurrent_ensemble([OpenTelemetryListener(tracer_provider=provider)]).run()

    spans = exporter.get_finished_spans()
    tasks = {s.context.span_id: s.name for s in spans if s.name.startswith("invoke_agent")}
    tools = [s for s in spans if s.name == "execute_tool meet"]
    assert len(tools) == 2
    parents = {tasks[s.parent.span_id] for s in tools if s.parent is not None}
    assert parents == {"invoke_agent Oslo guide", "invoke_agent Rome guide"}
    for span in spans:
        if span.name.startswith("chat"):
            assert span.parent is not None
            agent = (span.attributes or {})["gen_ai.agent.name"]
            assert tasks[span.parent.span_id] == f"invoke_agent {agent}"


def test_reviews_before_concurrent_tasks_land_on_their_own_task() -> None:
    from agentensemble_review import Continue, Edit, Review

    tasks = [
        Task(description=f"Visit {city}", before_review=Review.required())
        for city in ("Oslo", "Rome", "Lima")
    ]

    class Reviewer:
        """Edits Rome's task (whenever it is asked), lets the others go."""

        def review(self, request: Any) -> Any:
            return Edit("Visit Rome by train") if "Rome" in request.output else Continue()

    reviewer = Reviewer()
    model = FunctionChatModel(lambda messages, tools: "visited")

    output = Ensemble(
        tasks=tasks, llm=model, workflow=Workflow.PARALLEL, review_handler=reviewer
    ).run()

    trace = output.trace
    assert trace is not None
    for task in trace.tasks:
        (review,) = task.reviews
        assert review.timing == "before_execution"
        assert review.output is not None and review.output.split()[1] in task.description
    rome = next(t for t in trace.tasks if "Rome" in t.description)
    assert rome.description == "Visit Rome by train" and rome.reviews[0].decision == "edit"
