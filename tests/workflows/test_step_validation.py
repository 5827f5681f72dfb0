"""Bad loops, graphs, nested ensembles and fan-outs are refused before any model call, each with
a ConfigurationError naming the problem."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentensemble import ConfigurationError, Edge, Ensemble, Graph, Loop, Task, Workflow
from agentensemble.testing import ScriptedChatModel


def t(name: str, **kwargs: Any) -> Task:
    return Task(name=name, description=name, **kwargs)


def unknown_start() -> None:
    Graph(name="g", start="nowhere", states={"a": t("a")}, edges=[Edge("a", Graph.END)])


def edge_from_nowhere() -> None:
    Graph(name="g", start="a", states={"a": t("a")}, edges=[Edge("a", Graph.END), Edge("x", "a")])


def edge_to_nowhere() -> None:
    Graph(name="g", start="a", states={"a": t("a")}, edges=[Edge("a", "b")])


def state_without_edge() -> None:
    Graph(name="g", start="a", states={"a": t("a"), "b": t("b")}, edges=[Edge("a", "b")])


def no_states() -> None:
    Graph(name="g", start="a", states={}, edges=[])


def empty_body() -> None:
    Loop(name="l", body=[])


def duplicate_body_names() -> None:
    Loop(name="l", body=[t("same"), t("same")])


def duplicate_loop_names() -> None:
    Ensemble(tasks=[Loop(name="x", body=[t("a")]), Loop(name="x", body=[t("b")])])


def same_task_twice() -> None:
    shared = t("shared")
    Ensemble(tasks=[Loop(name="l1", body=[shared]), Loop(name="l2", body=[shared])])


def zero_iterations() -> None:
    Loop(name="l", body=[t("a")], max_iterations=0)


def zero_steps() -> None:
    Graph(name="g", start="a", states={"a": t("a")}, edges=[Edge("a", Graph.END)], max_steps=0)


def not_a_step_in_body() -> None:
    Loop(name="l", body=["write an essay"])


def context_outside_the_ensemble() -> None:
    stranger = t("stranger")
    Ensemble(tasks=[Loop(name="l", body=[t("a", context=[stranger])])])


def context_to_a_later_body_step() -> None:
    later = t("later")
    Ensemble(tasks=[Loop(name="l", body=[t("a", context=[later]), later])])


def context_into_another_loop() -> None:
    inner = t("inner")
    Ensemble(tasks=[Loop(name="l1", body=[inner]), Loop(name="l2", body=[t("b", context=[inner])])])


def loops_in_hierarchical() -> None:
    from agentensemble import Agent

    worker = Agent(role="Worker", goal="work")
    Ensemble(
        tasks=[Loop(name="l", body=[Task(description="a", agent=worker)])],
        workflow=Workflow.HIERARCHICAL,
    )


def nested_hierarchical() -> None:
    from agentensemble import Agent

    worker = Agent(role="Worker", goal="work")
    inner = Ensemble(tasks=[Task(description="a", agent=worker)], workflow=Workflow.HIERARCHICAL)
    Ensemble(tasks=[inner])


CASES: list[tuple[str, Callable[[], None], str]] = [
    ("nested HIERARCHICAL ensemble", nested_hierarchical, "is HIERARCHICAL"),
    ("unknown start state", unknown_start, "start 'nowhere' is not a state"),
    ("edge from nowhere", edge_from_nowhere, "comes from 'x', which is not a state"),
    ("edge to nowhere", edge_to_nowhere, "leads nowhere: 'b' is not a state"),
    ("state with no edge out", state_without_edge, "state 'b' has no edge out"),
    ("graph with no states", no_states, "has no states"),
    ("empty loop body", empty_body, "has an empty body"),
    ("duplicate body names", duplicate_body_names, "share the name 'same'"),
    ("duplicate loop names", duplicate_loop_names, "two steps are named 'x'"),
    ("a task in two places", same_task_twice, "appears twice"),
    (
        "max_iterations below 1",
        zero_iterations,
        "max_iterations must be a whole number of at least 1",
    ),
    ("max_steps below 1", zero_steps, "max_steps must be a whole number of at least 1"),
    ("not a step", not_a_step_in_body, "item 1 is a str"),
    (
        "context outside the ensemble",
        context_outside_the_ensemble,
        "'stranger', which it cannot see",
    ),
    ("context to a later body step", context_to_a_later_body_step, "'later', which runs later"),
    ("context into another loop", context_into_another_loop, "'inner', which it cannot see"),
    ("loops in HIERARCHICAL", loops_in_hierarchical, "HIERARCHICAL runs tasks only"),
]


@pytest.mark.parametrize(("build", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_shapes_are_configuration_errors_naming_the_problem(
    build: Callable[[], None], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        build()


def test_a_body_changed_after_construction_is_checked_again_before_any_request() -> None:
    model = ScriptedChatModel()
    stranger = t("stranger")
    body = t("a")
    ensemble = Ensemble(tasks=[Loop(name="l", body=[body])], llm=model)
    body.context.append(stranger)
    with pytest.raises(ConfigurationError, match="cannot see"):
        ensemble.run()
    assert model.requests == []
