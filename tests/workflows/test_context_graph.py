"""The context graph's pure rules: outside tasks, cycles, and what a failure blocks."""

from __future__ import annotations

import pytest

from agentensemble import Task
from agentensemble.workflows.context_graph import (
    check_task_graph,
    downstream_of,
    find_cycle,
    outside_context,
)


def chain(*names: str) -> list[Task]:
    """Tasks where each needs the one before it."""
    tasks: list[Task] = []
    for name in names:
        tasks.append(Task(description=name, name=name, context=tasks[-1:]))
    return tasks


def labels(tasks: list[Task] | None) -> list[str] | None:
    return None if tasks is None else [t.label for t in tasks]


def test_no_context_and_chains_have_no_cycle() -> None:
    assert find_cycle([Task(description="a"), Task(description="b")]) is None
    assert find_cycle(chain("a", "b", "c")) is None
    assert find_cycle(list(reversed(chain("a", "b", "c")))) is None


@pytest.mark.parametrize(
    ("edges", "cycle"),
    [
        ({"a": ["a"]}, ["a", "a"]),
        ({"a": ["b"], "b": ["a"]}, ["a", "b", "a"]),
        ({"a": ["b"], "b": ["c"], "c": ["a"]}, ["a", "b", "c", "a"]),
        ({"x": ["a"], "a": ["b"], "b": ["a"]}, ["a", "b", "a"]),
        ({"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}, None),  # a diamond
    ],
    ids=["self", "pair", "triangle", "tail into a pair", "diamond"],
)
def test_find_cycle_names_the_tasks_on_it(
    edges: dict[str, list[str]], cycle: list[str] | None
) -> None:
    tasks = {name: Task(description=name, name=name) for name in edges}
    for name, needs in edges.items():
        tasks[name].context.extend(tasks[n] for n in needs)

    assert labels(find_cycle(list(tasks.values()))) == cycle


def test_a_long_chain_is_checked_without_recursion() -> None:
    tasks = chain(*(f"t{i}" for i in range(3000)))
    assert find_cycle(tasks) is None


def test_outside_context_points_at_the_stranger() -> None:
    stranger = Task(description="stranger")
    inside = Task(description="inside")
    needy = Task(description="needy", context=[inside, stranger])

    assert outside_context([inside, needy]) == (2, needy, stranger)
    assert outside_context([inside, needy, stranger]) is None
    with pytest.raises(ValueError, match="'stranger', which is not in this ensemble"):
        check_task_graph([inside, needy])


def test_downstream_of_follows_every_path_in_list_order() -> None:
    a, b, c = chain("a", "b", "c")
    side = Task(description="side", name="side", context=[a])
    free = Task(description="free", name="free")

    assert labels(downstream_of(a, [free, c, b, side])) == ["c", "b", "side"]
    assert downstream_of(c, [a, b, c, side, free]) == []
