"""OpenTelemetry sees loops and graphs: each iteration's task its own span, each iteration and
graph step a point on the run's span."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentensemble import Edge, Ensemble, Graph, Loop, Task
from agentensemble.otel import OpenTelemetryListener
from agentensemble.testing import ScriptedChatModel


def test_each_iteration_and_step_is_visible_in_the_spans() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedChatModel(["a1", "a2", "g1"])
    loop = Loop(name="l", body=[Task(name="a", description="a")], max_iterations=2)
    graph = Graph(
        name="g", start="s", states={"s": Task(description="s")}, edges=[Edge("s", Graph.END)]
    )
    Ensemble(
        tasks=[loop, graph], llm=model, listeners=[OpenTelemetryListener(tracer_provider=provider)]
    ).run()

    spans = exporter.get_finished_spans()
    agents = [s for s in spans if s.name.startswith("invoke_agent")]
    assert sorted(s.attributes["agentensemble.task_index"] for s in agents) == [1, 2, 3]  # type: ignore[index]
    (run,) = [s for s in spans if s.name.startswith("invoke_workflow")]
    points = [(e.name, dict(e.attributes or {})) for e in run.events]
    assert [name for name, _ in points] == [
        "agentensemble.loop_iteration",
        "agentensemble.loop_iteration",
        "agentensemble.graph_step",
    ]
    assert points[1][1]["agentensemble.stopped_by"] == "max_iterations"
    assert points[2][1]["agentensemble.next_state"] == Graph.END
