"""``run()`` against the ways ``arun()`` is called, in one warm process.

Usage: ``python benchmarks/run_arun_shapes.py [--rounds N]``. One 1-tool scripted run
(``runtime_bench._one_tool_ensemble``) four ways, batches of 100 interleaved round by round:
``run()``; ``run_sync(arun())`` (``run()`` without its caller-line and session checks);
``arun()`` awaited inline in a task that already runs (``run_compare.py``'s ``arun()``);
``arun()`` run as its own task (``asyncio.create_task`` / ``gather``, as concurrent runs are
started). Printed: the fastest batch's CPU a run of each (the closest to an idle machine), and
``run()`` over each ``arun()`` shape.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from runtime_bench import _one_tool_ensemble

from agentensemble._base.background_loop import run_sync

BATCH = 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    ensemble = _one_tool_ensemble()
    loop = asyncio.new_event_loop()

    async def awaited() -> None:
        for _ in range(BATCH):
            await ensemble.arun()

    async def as_tasks() -> None:
        for _ in range(BATCH):
            await asyncio.ensure_future(ensemble.arun())

    shapes: dict[str, Callable[[], object]] = {
        "run()": lambda: [ensemble.run() for _ in range(BATCH)],
        "run_sync(arun())": lambda: [run_sync(ensemble.arun()) for _ in range(BATCH)],
        "arun() awaited inline": lambda: loop.run_until_complete(awaited()),
        "arun() as its own task": lambda: loop.run_until_complete(as_tasks()),
    }
    for shape in shapes.values():  # warm up
        shape()
    fastest = dict.fromkeys(shapes, float("inf"))
    for _ in range(args.rounds):
        for name, shape in shapes.items():
            started = time.process_time()
            shape()
            fastest[name] = min(fastest[name], (time.process_time() - started) / BATCH * 1e6)
    for name, value in fastest.items():
        print(f"{name:<24} {value:7.1f} us")
    for name in ("arun() awaited inline", "arun() as its own task"):
        print(f"run() / {name}: {fastest['run()'] / fastest[name]:.3f}x")


if __name__ == "__main__":
    main()
