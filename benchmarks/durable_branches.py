"""A child workflow per concurrent branch against today's numbered ranges (SEAMS D4): the cost.

Usage: ``python benchmarks/durable_branches.py [--runs 40] [--rounds 5] [--branches 4]``.

One DBOS process on a fresh SQLite file runs two workflows, interleaved round after round:

- **ranges** (today): the workflow starts ``--branches`` branches at once, each making two steps
  in a step-number range of its own (``agentensemble.durable._steps.branch_ranges``, the
  numbering ``DBOSSteps.branches`` gives concurrent calls);
- **children**: the same branches, each a child workflow (``DBOS.start_workflow_async``, public)
  making its two steps, the parent awaiting their results: what replacing D4/D5 with a child
  workflow per branch would run.

Prints the CPU time (the process's own) and wall time of a run of each, median over rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dbos import DBOS  # noqa: E402

from agentensemble.durable import _dbos  # noqa: E402
from agentensemble.durable._steps import (  # noqa: E402
    _in_branch,
    _run_steps,
    _RunSteps,
    branch_ranges,
)


def _work(value: int) -> int:
    return value + 1


async def _two_steps(value: int) -> int:
    first = await DBOS.run_step_async({"name": "model"}, _work, value)
    return await DBOS.run_step_async({"name": "tool"}, _work, first)


@DBOS.workflow(name="bench.child")
async def child(value: int) -> int:
    return await _two_steps(value)


@DBOS.workflow(name="bench.children")
async def with_children(branches: int) -> int:
    handles = [await DBOS.start_workflow_async(child, i) for i in range(branches)]
    return sum([await h.get_result() for h in handles])


@DBOS.workflow(name="bench.ranges")
async def with_ranges(branches: int) -> int:
    token = _run_steps.set(_RunSteps(_dbos.workflow_context()))
    try:
        scopes = branch_ranges(branches) or []

        async def one(index: int) -> int:
            with _in_branch(scopes[index]), _dbos.counting_with(scopes[index].context):
                return await _two_steps(index)

        return sum(await asyncio.gather(*(one(i) for i in range(branches))))
    finally:
        _run_steps.reset(token)


async def _sample(workflow: object, runs: int, branches: int, prefix: str) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for index in range(runs):
        handle = await DBOS.start_workflow_async(workflow, branches)  # type: ignore[arg-type]
        assert await handle.get_result() == branches * (branches + 1) // 2 + branches
        del index
    return (time.process_time() - cpu) / runs * 1000, (time.perf_counter() - wall) / runs * 1000


async def main(args: argparse.Namespace) -> None:
    samples: dict[str, list[tuple[float, float]]] = {"ranges": [], "children": []}
    await _sample(with_ranges, 5, args.branches, "warm")
    await _sample(with_children, 5, args.branches, "warm")
    for round_ in range(args.rounds):
        samples["ranges"].append(await _sample(with_ranges, args.runs, args.branches, "r"))
        samples["children"].append(await _sample(with_children, args.runs, args.branches, "c"))
        del round_
    load = os.getloadavg()[0]
    print(f"{args.branches} branches of two steps, SQLite, {args.rounds} rounds of {args.runs} "
          f"runs, load {load:.1f}")  # fmt: skip
    base = statistics.median(c for c, _ in samples["ranges"])
    for name, found in samples.items():
        cpu = statistics.median(c for c, _ in found)
        wall = statistics.median(w for _, w in found)
        print(f"  {name:9s} CPU {cpu:6.2f} ms a run ({cpu / base:.2f}x), wall {wall:6.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--branches", type=int, default=4)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        DBOS(config={"name": "bench-branches", "system_database_url":
                     f"sqlite:///{folder}/bench.sqlite", "log_level": "WARNING"})  # fmt: skip
        DBOS.launch()
        try:
            asyncio.run(main(arguments))
        finally:
            DBOS.destroy()
