"""Trajectory modes: a table of the documented rules, and properties relating the modes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentensemble.evals import Case, EvalContext, Trajectory
from agentensemble.evals.trajectory import Mode, trajectory_matches
from agentensemble.outputs import EnsembleOutput, TaskOutput, ToolCallRecord

RULES: list[tuple[list[str], list[str], Mode, bool]] = [
    (["a", "b"], ["a", "b"], "exact", True),
    (["a", "b"], ["b", "a"], "exact", False),
    (["a", "b", "c"], ["a", "b"], "exact", False),
    (["a", "x", "b"], ["a", "b"], "in_order", True),
    (["b", "a"], ["a", "b"], "in_order", False),
    (["a"], ["a", "a"], "in_order", False),
    (["a", "b", "a"], ["a", "a"], "in_order", True),
    ([], [], "in_order", True),
    (["b", "a"], ["a", "b"], "any_order", True),
    (["a", "a", "b"], ["a", "b"], "any_order", False),
    (["a"], ["a", "b"], "any_order", False),
    (["a"], ["a", "b"], "subset", True),
    ([], ["a"], "subset", True),
    (["a", "c"], ["a", "b"], "subset", False),
    (["a", "b", "c"], ["a", "b"], "superset", True),
    (["a"], ["a", "b"], "superset", False),
    (["b", "a"], ["a", "b"], "superset", True),
]


@pytest.mark.parametrize(("actual", "expected", "mode", "matches"), RULES)
def test_trajectory_rule(actual: list[str], expected: list[str], mode: Mode, matches: bool) -> None:
    assert trajectory_matches(actual, expected, mode) is matches


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="exact, in_order"):
        trajectory_matches([], [], "sorted")  # type: ignore[arg-type]


names = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=6)


@given(names, names)
def test_modes_imply_each_other(actual: list[str], expected: list[str]) -> None:
    exact = trajectory_matches(actual, expected, "exact")
    if exact:
        assert trajectory_matches(actual, expected, "in_order")
        assert trajectory_matches(actual, expected, "any_order")
    if trajectory_matches(actual, expected, "any_order"):
        assert trajectory_matches(actual, expected, "subset")
        assert trajectory_matches(actual, expected, "superset")
    if trajectory_matches(actual, expected, "in_order"):
        assert trajectory_matches(actual, expected, "superset")
    assert trajectory_matches(actual, actual, "exact")
    assert trajectory_matches(actual, expected, "subset") == trajectory_matches(
        expected, actual, "superset"
    )


def run(*tasks: tuple[str, str, list[str]]) -> EvalContext:
    outputs = [
        TaskOutput(
            raw="x",
            task_description=f"Do {name}",
            task_name=name,
            agent_role=role,
            tool_calls=[
                ToolCallRecord(name=t, arguments="{}", output="", is_success=True) for t in tools
            ],
        )
        for name, role, tools in tasks
    ]
    out = EnsembleOutput(raw="x", task_outputs=outputs)
    return EvalContext(case=Case(name="c"), output=out, expected=None, duration=timedelta(0))


def test_trajectory_reads_tools_tasks_and_agents_from_the_run() -> None:
    context = run(("research", "Researcher", ["search", "fetch"]), ("write", "Writer", ["count"]))
    assert Trajectory(["search", "fetch", "count"], mode="exact")(context).passed
    assert Trajectory(["research", "write"], mode="exact", of="tasks")(context).passed
    assert Trajectory(["Writer", "Researcher"], mode="any_order", of="agents")(context).passed
    failed = Trajectory(["count", "search"])(context)
    assert not failed.passed
    assert "['search', 'fetch', 'count']" in failed.reason
