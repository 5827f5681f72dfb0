"""Loop and graph events name the ``until`` / ``when`` that decided (what a run page shows as the
exit condition and the edge taken), in the events and in the trace."""

from __future__ import annotations

from typing import Any

import pytest

from agentensemble import (
    Edge,
    Ensemble,
    EnsembleEvent,
    Graph,
    GraphState,
    GraphStepCompleted,
    Loop,
    LoopIterationCompleted,
    LoopState,
    Task,
)


class Recorder:
    def __init__(self) -> None:
        self.events: list[EnsembleEvent] = []

    def on_event(self, event: EnsembleEvent) -> None:
        self.events.append(event)


def second_time(state: LoopState) -> bool:
    return state.iteration == 2


def body() -> list[Task]:
    return [Task(name="a", description="a", handler=lambda ctx: "A")]


@pytest.mark.parametrize(
    ("until", "condition", "stopped"),
    [
        (second_time, "second_time", [None, "until"]),
        (lambda state: state.iteration == 2, "<lambda>", [None, "until"]),
        (None, None, [None, "max_iterations"]),
    ],
)
def test_a_loop_iteration_names_its_until(until: Any, condition: Any, stopped: Any) -> None:
    recorder = Recorder()
    loop = Loop(name="l", body=body(), until=until, max_iterations=2)
    out = Ensemble(tasks=[loop], listeners=[recorder]).run()
    ends = [e for e in recorder.events if isinstance(e, LoopIterationCompleted)]
    assert [(e.condition, e.stopped_by) for e in ends] == [(condition, s) for s in stopped]
    assert out.trace is not None
    records = [r.fields for r in out.trace.events if r.type == "LoopIterationCompleted"]
    assert [r["condition"] for r in records] == [condition, condition]


class Policy:
    def approved(self, state: LoopState) -> bool:
        return True


def test_a_method_until_is_named_with_its_class() -> None:
    recorder = Recorder()
    loop = Loop(name="l", body=body(), until=Policy().approved, max_iterations=2)
    Ensemble(tasks=[loop], listeners=[recorder]).run()
    (end,) = [e for e in recorder.events if isinstance(e, LoopIterationCompleted)]
    assert (end.condition, end.stopped_by) == ("Policy.approved", "until")


def test_a_graph_step_names_the_when_of_the_edge_taken() -> None:
    def needs_more(state: GraphState) -> bool:  # defined in a function: named without it
        return state.step < 3

    recorder = Recorder()
    graph = Graph(
        name="g",
        start="draft",
        states={
            "draft": Task(name="d", description="d", handler=lambda ctx: "D"),
            "check": Task(name="c", description="c", handler=lambda ctx: "C"),
        },
        edges=[
            Edge("draft", "check"),
            Edge("check", "draft", when=needs_more),
            Edge("check", Graph.END),
        ],
    )
    out = Ensemble(tasks=[graph], listeners=[recorder]).run()
    steps = [e for e in recorder.events if isinstance(e, GraphStepCompleted)]
    assert [(e.state, e.next_state, e.condition) for e in steps] == [
        ("draft", "check", None),
        ("check", "draft", "needs_more"),
        ("draft", "check", None),
        ("check", Graph.END, None),
    ]
    assert out.trace is not None
    records = [r.fields for r in out.trace.events if r.type == "GraphStepCompleted"]
    assert [r["condition"] for r in records] == [e.condition for e in steps]
