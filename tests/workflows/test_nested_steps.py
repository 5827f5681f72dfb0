"""A nested Ensemble as a step: outer inputs in, final output to later context, one run."""

from __future__ import annotations

from typing import Any

import pytest

from agentensemble import (
    Ensemble,
    EnsembleEvent,
    EnsembleStarted,
    Loop,
    Task,
    TaskExecutionError,
    Workflow,
)
from agentensemble.testing import ScriptedChatModel


def echo(name: str) -> Task:
    return Task(name=name, description=f"{name} on {{topic}}", handler=lambda ctx: ctx.description)


def test_a_parallel_phase_inside_a_sequential_pipeline() -> None:
    research = Ensemble(
        name="research", tasks=[echo("web"), echo("papers")], workflow=Workflow.PARALLEL
    )
    write = Task(
        name="write",
        description="write",
        context=[research],
        handler=lambda ctx: "from " + ",".join(o.raw for o in ctx.context_outputs),
    )
    events: list[EnsembleEvent] = []

    class Listener:
        def on_event(self, event: EnsembleEvent) -> None:
            events.append(event)

    out = Ensemble(tasks=[research, write], listeners=[Listener()]).run({"topic": "owls"})
    assert [o.raw for o in out.task_outputs] == [
        "web on owls",
        "papers on owls",
        "from papers on owls",
    ]
    assert sum(isinstance(e, EnsembleStarted) for e in events) == 1  # one run, not two
    assert len({e.run_id for e in events}) == 1


def test_a_phase_with_review_and_retry() -> None:
    """The Java "phase with review and retry": an ensemble whose last task reviews, in a Loop."""
    model = ScriptedChatModel(["draft 1", "REJECT: thin", "draft 2", "APPROVE"])
    phase = Ensemble(
        name="phase",
        tasks=[
            Task(name="draft", description="Draft"),
            Task(name="check", description="Review the draft"),
        ],
    )
    loop = Loop(
        name="retry", body=[phase], until=lambda s: "APPROVE" in s.last.raw, max_iterations=3
    )
    out = Ensemble(tasks=[loop], llm=model).run()
    assert out.loops["retry"].iterations == 2
    assert out.loops["retry"].history[0]["phase"].raw == "REJECT: thin"
    # feedback reaches the phase's first task
    assert "REJECT: thin" in model.requests[2].last_user_content


def test_the_nested_ensembles_own_model_is_its_tasks_default() -> None:
    inner_model = ScriptedChatModel(["inner"])
    outer_model = ScriptedChatModel(["outer"])
    inner = Ensemble(tasks=[Task(description="in")], llm=inner_model)
    out = Ensemble(tasks=[inner, Task(description="out")], llm=outer_model).run()
    assert [o.raw for o in out.task_outputs] == ["inner", "outer"]


def test_a_failing_nested_task_fails_the_run_naming_it_and_keeping_outputs() -> None:
    def boom(ctx: Any) -> str:
        raise ValueError("inner boom")

    bad = Task(name="bad", description="bad", handler=boom)
    inner = Ensemble(tasks=[echo("ok"), bad])
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[echo("first"), inner]).run({"topic": "t"})
    assert caught.value.task is bad
    assert [o.raw for o in caught.value.completed_outputs] == ["first on t", "ok on t"]


def test_a_loop_or_graph_can_be_named_in_context_in_parallel() -> None:
    loop = Loop(
        name="l", body=[Task(name="a", description="a", handler=lambda ctx: "A")], max_iterations=2
    )
    reader = Task(
        name="reader",
        description="r",
        context=[loop],
        handler=lambda ctx: ",".join(o.raw for o in ctx.context_outputs),
    )
    out = Ensemble(tasks=[reader, loop], workflow=Workflow.PARALLEL).run()
    assert out.output_for(reader) is not None and out.output_for(reader).raw == "A"  # type: ignore[union-attr]
    assert [o.raw for o in out.task_outputs] == ["A", "A", "A"]  # list order: reader, then loop


def test_output_for_a_loop_graph_or_nested_ensemble_is_its_final_output() -> None:
    from agentensemble import Edge, Graph

    loop = Loop(
        name="l", body=[Task(name="a", description="a", handler=lambda c: "A")], max_iterations=2
    )
    graph = Graph(
        name="g",
        start="s",
        states={"s": Task(name="s", description="s", handler=lambda c: "S")},
        edges=[Edge("s", Graph.END)],
    )
    inner = Ensemble(name="inner", tasks=[Task(name="i", description="i", handler=lambda c: "I")])
    for workflow in (Workflow.SEQUENTIAL, Workflow.PARALLEL):
        out = Ensemble(tasks=[loop, graph, inner], workflow=workflow).run()
        assert [out.output_for(step).raw for step in (loop, graph, inner)] == ["A", "S", "I"]  # type: ignore[union-attr]
        assert out.output_for(loop) is out.task_outputs[1]
        assert out.output_for(loop.body[0]) is out.task_outputs[1]  # its last run
