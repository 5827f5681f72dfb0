"""Properties of the task-graph rules over random graphs."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from agentensemble import Task
from agentensemble.workflows.context_graph import downstream_of, find_cycle

# edges i -> j mean "task i needs task j"; only j < i gives a DAG
dags = st.integers(min_value=1, max_value=12).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.sets(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[1] < e[0])
        ),
    )
)


def build(n: int, edges: set[tuple[int, int]]) -> list[Task]:
    tasks = [Task(description=f"t{i}", name=f"t{i}") for i in range(n)]
    for needer, needed in sorted(edges):
        tasks[needer].context.append(tasks[needed])
    return tasks


@given(dags)
def test_a_graph_whose_edges_point_backwards_has_no_cycle(
    graph: tuple[int, set[tuple[int, int]]],
) -> None:
    assert find_cycle(build(*graph)) is None


@given(dags, st.data())
def test_a_forward_edge_closing_a_path_is_reported_as_a_real_cycle(
    graph: tuple[int, set[tuple[int, int]]], data: st.DataObject
) -> None:
    n, edges = graph
    tasks = build(n, edges)
    # pick a task and something it (transitively) needs, then make that need it back
    needer = data.draw(st.integers(0, n - 1))
    reachable = downstream_of(tasks[needer], tasks)  # tasks that need `needer`
    if not reachable:
        tasks[needer].context.append(tasks[needer])  # a self-loop is a cycle too
    else:
        tasks[needer].context.append(data.draw(st.sampled_from(reachable)))

    cycle = find_cycle(tasks)

    assert cycle is not None and cycle[0] is cycle[-1]
    for task, needed in itertools.pairwise(cycle):
        assert any(dep is needed for dep in task.context)  # every step is a real context link
