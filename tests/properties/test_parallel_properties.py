"""PARALLEL over random graphs and random finishing orders: a task never starts before every
task in its context has finished, and the outputs always come back in list order."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentensemble import Ensemble, Task, Workflow
from agentensemble.testing import FunctionChatModel

graphs = st.integers(min_value=1, max_value=7).flatmap(
    lambda n: st.tuples(
        st.just(n),
        # i needs j only for j < i (a DAG), then the list is shuffled
        st.sets(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[1] < e[0])
        ),
        st.lists(st.integers(0, 5), min_size=n, max_size=n),  # yields before answering
        st.permutations(range(n)),
        st.one_of(st.none(), st.integers(1, 3)),
    )
)


@settings(max_examples=60)
@given(graphs)
def test_context_is_respected_and_order_kept(graph: Any) -> None:
    n, edges, delays, order, cap = graph
    tasks = [Task(description=f"task {i}", name=str(i)) for i in range(n)]
    for needer, needed in sorted(edges):
        tasks[needer].context.append(tasks[needed])
    events: list[tuple[str, int]] = []
    running = 0
    most = 0

    async def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        nonlocal running, most
        prompt = str(messages[-1]["content"]).split("## Task\n", 1)[1]
        i = int(prompt.split()[1])
        events.append(("start", i))
        running += 1
        most = max(most, running)
        for _ in range(delays[i]):
            await asyncio.sleep(0)
        running -= 1
        events.append(("end", i))
        return f"out {i}"

    listed = [tasks[i] for i in order]
    ensemble = Ensemble(
        tasks=listed, workflow=Workflow.PARALLEL, max_concurrency=cap, llm=FunctionChatModel(answer)
    )

    result = ensemble.run()

    assert [o.raw for o in result.task_outputs] == [f"out {t.name}" for t in listed]
    position = {event: index for index, event in enumerate(events)}
    for needer, needed in edges:
        assert position[("end", needed)] < position[("start", needer)]
    if cap is not None:
        assert most <= cap
