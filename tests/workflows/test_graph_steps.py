"""Graph: states, edges tried in order (first match wins), Graph.END, max_steps, feedback."""

from __future__ import annotations

from typing import Any

import pytest

from agentensemble import (
    Edge,
    Ensemble,
    EnsembleEvent,
    Graph,
    GraphMaxStepsError,
    GraphNoEdgeError,
    GraphState,
    GraphStepCompleted,
    Task,
    TaskExecutionError,
)
from agentensemble.testing import ScriptedChatModel
from agentensemble.workflows.task_step import FEEDBACK_ON_IT, PREVIOUS_ANSWER


def answers(*texts: str) -> Any:
    script = iter(texts)
    return lambda ctx: next(script)


def triage_graph(model: ScriptedChatModel, **settings: Any) -> Graph:
    return Graph(
        name="support",
        start="triage",
        states={
            "triage": Task(description="Triage the question"),
            "research": Task(description="Research"),
            "answer": Task(description="Answer"),
        },
        edges=[
            Edge("triage", "research"),
            Edge("research", "answer"),
            Edge("answer", "research", when=lambda s: "THIN" in s.output.raw),
            Edge("answer", Graph.END),
        ],
        **settings,
    )


def test_the_path_follows_the_first_matching_edge_back_and_to_the_end() -> None:
    model = ScriptedChatModel(["billing", "notes", "THIN answer", "more notes", "full answer"])
    graph = triage_graph(model)
    out = Ensemble(tasks=[graph], llm=model).run()
    result = out.graphs["support"]
    assert result.path == ["triage", "research", "answer", "research", "answer"]
    assert result.stopped_by == "end"
    assert result.outputs["answer"].raw == "full answer"
    assert [o.raw for o in out.task_outputs] == [
        "billing",
        "notes",
        "THIN answer",
        "more notes",
        "full answer",
    ]
    assert out.raw == "full answer"


def test_a_revisited_state_gets_its_previous_output_and_what_sent_the_run_back() -> None:
    model = ScriptedChatModel(["billing", "notes", "THIN answer", "more notes", "full answer"])
    Ensemble(tasks=[triage_graph(model)], llm=model).run()
    first_research, second_research = model.requests[1], model.requests[3]
    assert PREVIOUS_ANSWER not in first_research.last_user_content
    prompt = second_research.last_user_content
    assert PREVIOUS_ANSWER in prompt and FEEDBACK_ON_IT in prompt
    assert prompt.index("notes") < prompt.index("THIN answer")


def test_each_state_gets_the_output_of_the_state_before_it() -> None:
    model = ScriptedChatModel(["billing", "notes", "THIN answer", "more notes", "full answer"])
    Ensemble(tasks=[triage_graph(model)], llm=model).run()
    assert "billing" in model.requests[1].last_user_content
    assert "notes" in model.requests[2].last_user_content
    last = model.requests[4].last_user_content  # the answer again: its THIN answer, new notes
    assert "more notes" in last and "THIN answer" in last and PREVIOUS_ANSWER in last


def test_without_feedback_a_revisited_state_sees_only_the_hand_off() -> None:
    model = ScriptedChatModel(["billing", "notes", "THIN answer", "more notes", "full answer"])
    Ensemble(tasks=[triage_graph(model, feedback=False)], llm=model).run()
    prompt = model.requests[3].last_user_content
    assert "THIN answer" in prompt  # what the answer state handed on
    assert PREVIOUS_ANSWER not in prompt and "\nnotes\n" not in prompt


@pytest.mark.parametrize(
    ("on_max_steps", "max_steps"),
    [("return_last", 3), ("fail", 3), ("return_last", 1)],
)
def test_max_steps_runs_at_most_that_many_states(on_max_steps: str, max_steps: int) -> None:
    ping = Task(name="ping", description="ping", handler=lambda ctx: "ping")
    pong = Task(name="pong", description="pong", handler=lambda ctx: "pong")
    graph = Graph(
        name="g",
        start="ping",
        states={"ping": ping, "pong": pong},
        edges=[Edge("ping", "pong"), Edge("pong", "ping")],
        max_steps=max_steps,
        on_max_steps=on_max_steps,  # type: ignore[arg-type]
    )
    ensemble = Ensemble(tasks=[graph])
    if on_max_steps == "fail":
        with pytest.raises(GraphMaxStepsError) as caught:
            ensemble.run()
        assert caught.value.path == ["ping", "pong", "ping"]
        assert len(caught.value.completed_outputs) == max_steps
        return
    out = ensemble.run()
    assert len(out.task_outputs) == max_steps
    assert out.graphs["g"].stopped_by == "max_steps"


def test_no_matching_edge_names_the_state_and_keeps_the_outputs() -> None:
    a = Task(name="a", description="a", handler=lambda ctx: "A")
    graph = Graph(
        name="g",
        start="a",
        states={"a": a},
        edges=[Edge("a", Graph.END, when=lambda s: s.output.raw == "B")],
    )
    with pytest.raises(GraphNoEdgeError) as caught:
        Ensemble(tasks=[graph]).run()
    assert caught.value.state == "a" and "'a'" in str(caught.value)
    assert [o.raw for o in caught.value.completed_outputs] == ["A"]


def test_a_when_that_raises_fails_the_run_with_that_error() -> None:
    def broken(state: GraphState) -> bool:
        raise RuntimeError("bad predicate")

    a = Task(name="a", description="a", handler=lambda ctx: "A")
    graph = Graph(name="g", start="a", states={"a": a}, edges=[Edge("a", Graph.END, when=broken)])
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[graph]).run()
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert [o.raw for o in caught.value.completed_outputs] == ["A"]


def test_edges_see_the_graph_state_and_events_tell_each_step() -> None:
    seen: list[GraphState] = []
    events: list[EnsembleEvent] = []

    def record(state: GraphState) -> bool:
        seen.append(state)
        return True

    a = Task(name="a", description="a", handler=answers("A1"))
    b = Task(name="b", description="b", handler=answers("B1"))
    graph = Graph(
        name="g",
        start="first",
        states={"first": a, "second": b},
        edges=[Edge("first", "second", when=record), Edge("second", Graph.END, when=record)],
    )

    class Listener:
        def on_event(self, event: EnsembleEvent) -> None:
            events.append(event)

    Ensemble(tasks=[graph], listeners=[Listener()]).run()
    assert [(s.step, s.state, s.output.raw, s.path) for s in seen] == [
        (1, "first", "A1", ["first"]),
        (2, "second", "B1", ["first", "second"]),
    ]
    assert sorted(seen[1].outputs) == ["first", "second"]
    steps = [e for e in events if isinstance(e, GraphStepCompleted)]
    assert [(e.graph_name, e.step, e.state, e.next_state, e.task_indices) for e in steps] == [
        ("g", 1, "first", "second", (1,)),
        ("g", 2, "second", Graph.END, (2,)),
    ]


def test_an_ensemble_as_a_state_and_context_to_the_graph() -> None:
    phase = Ensemble(
        name="phase",
        tasks=[
            Task(name="p1", description="p1", handler=lambda ctx: "p1"),
            Task(name="p2", description="p2", handler=lambda ctx: "p2"),
        ],
    )
    graph = Graph(
        name="g", start="phase", states={"phase": phase}, edges=[Edge("phase", Graph.END)]
    )
    after = Task(
        name="after",
        description="after",
        context=[graph],
        handler=lambda ctx: "got " + ",".join(o.raw for o in ctx.context_outputs),
    )
    out = Ensemble(tasks=[graph, after]).run()
    assert [o.raw for o in out.task_outputs] == ["p1", "p2", "got p2"]
    assert out.graphs["g"].outputs["phase"].raw == "p2"
