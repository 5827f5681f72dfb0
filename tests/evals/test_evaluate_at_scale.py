"""evaluate() over many cases: exactly ``max_concurrency`` runs in flight once there is work for
them, the loop holding tasks for those runs only (not one waiting task per case), and every
report line still the case's own run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agentensemble import Agent, Ensemble, Task
from agentensemble.evals import Case, Contains, Dataset, aevaluate
from agentensemble.testing import FunctionChatModel

CASES, AT_ONCE = 300, 40


@pytest.mark.anyio
async def test_many_cases_run_max_concurrency_at_once_with_tasks_for_those_runs_only() -> None:
    in_flight = peak = most_tasks = 0
    full = asyncio.Event()

    async def answer(messages: Sequence[Any], tools: Any) -> str:
        nonlocal in_flight, peak, most_tasks
        in_flight += 1
        peak = max(peak, in_flight)
        most_tasks = max(most_tasks, len(asyncio.all_tasks()))
        if in_flight == AT_ONCE:
            full.set()  # the first wave is all in: from here on nobody waits
        await asyncio.wait_for(full.wait(), 30)  # a bounded wait: fewer at once fails, not hangs
        await asyncio.sleep(0)  # let the others overlap this run
        in_flight -= 1
        prompt = str(messages[-1]["content"])
        return f"answer to {prompt.rsplit('question ', 1)[1].split()[0]}"

    agent = Agent(role="Answerer", goal="Answer", llm=FunctionChatModel(answer))
    shared = Ensemble(
        tasks=[Task(description="Answer question {n} now", expected_output="x", agent=agent)]
    )
    dataset = Dataset(
        name="many",
        cases=[
            Case(name=f"case {n}", inputs={"n": n}, evaluators=[Contains(f"answer to {n}")])
            for n in range(CASES)
        ],
    )
    done: list[int] = []

    report = await aevaluate(
        shared, dataset, max_concurrency=AT_ONCE, on_progress=lambda d, t, c, r: done.append(d)
    )

    assert report.passed, [c.case.name for c in report.cases if not c.passed][:5]
    assert [c.case.name for c in report.cases] == [f"case {n}" for n in range(CASES)]
    assert peak == AT_ONCE  # never more than asked, and all of them once there was work
    assert done == list(range(1, CASES + 1))
    # per run in flight its worker and the run's own task (plus this test's), never a waiting
    # task per case
    assert most_tasks <= 2 * AT_ONCE + 1 < CASES


@pytest.mark.anyio
async def test_fewer_cases_than_max_concurrency_start_a_worker_per_run() -> None:
    seen: list[int] = []

    async def answer(messages: Sequence[Any], tools: Any) -> str:
        seen.append(len(asyncio.all_tasks()))
        return "ok"

    agent = Agent(role="A", goal="g", llm=FunctionChatModel(answer))
    shared = Ensemble(tasks=[Task(description="Say {n}", expected_output="t", agent=agent)])
    dataset = Dataset(name="few", cases=[Case(name=f"c{n}", inputs={"n": n}) for n in range(3)])

    report = await aevaluate(shared, dataset, repeat=2, max_concurrency=1000)

    assert report.passed and [len(c.runs) for c in report.cases] == [2, 2, 2]
    assert max(seen) <= 2 * 6 + 1  # six runs: six workers (and their runs), not a thousand
