"""Evaluation harness measurements (agentensemble.evals) with a scripted model: no network.

Usage: ``python benchmarks/evals.py [--repeats N] [--write]``.

- Harness overhead per case run: the same factory-made one-task ensemble run directly
  (``await factory().arun(inputs)``, one after the other) and as cases of ``aevaluate`` (one at
  a time, three evaluators each, report included); the difference per run is what the harness
  adds (target: under 1 ms). Rounds are interleaved, figures are medians.
- Scale: 125, 250, 500 and 1,000 cases x 3 repeats at concurrency 8; time per case run should
  stay flat (linear in the number of runs).

``--write`` records the table in the evals section of ``benchmarks/RESULTS.md`` (between its
markers; the rest of the file is left alone).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentensemble import Agent, Ensemble, Task  # noqa: E402
from agentensemble.evals import (  # noqa: E402
    Case,
    Contains,
    Dataset,
    MaxTokens,
    Trajectory,
    aevaluate,
)
from agentensemble.testing import FunctionChatModel  # noqa: E402

BEGIN, END = "<!-- evals:begin -->", "<!-- evals:end -->"
Row = tuple[str, str, str]


def _answer(messages: Sequence[Any], tools: Any) -> str:
    return "The answer is 42."


def factory() -> Ensemble:
    agent = Agent(role="Answerer", goal="Answer", llm=FunctionChatModel(_answer))
    return Ensemble(
        tasks=[Task(name="answer", description="Answer {n}", expected_output="x", agent=agent)]
    )


def dataset(cases: int) -> Dataset:
    return Dataset(
        name="bench",
        evaluators=[Contains("42"), Trajectory(["answer"], of="tasks"), MaxTokens(10_000)],
        cases=[Case(name=f"case {i}", inputs={"n": i}) for i in range(cases)],
    )


async def direct(runs: int, clock: Any = time.perf_counter) -> float:
    started = clock()
    for i in range(runs):
        await factory().arun({"n": i})
    return float(clock() - started)


async def harness(
    data: Dataset, repeat: int = 1, concurrency: int = 1, clock: Any = time.perf_counter
) -> float:
    started = clock()
    report = await aevaluate(factory, data, repeat=repeat, max_concurrency=concurrency)
    took = float(clock() - started)
    assert report.passed, "the benchmark's dataset must pass"
    return took


async def bench_overhead(repeats: int, runs: int = 200) -> list[Row]:
    data = dataset(runs)
    await direct(20)  # warm up: imports, pydantic schemas
    await harness(dataset(20))
    rows: list[Row] = []
    # wall time, and CPU time of this process: with a scripted model a run never waits, so CPU
    # time is the work itself, free of the other processes sharing the machine
    for label, clock in (("wall", time.perf_counter), ("CPU", time.process_time)):
        plain, evaluated = [], []
        for _ in range(repeats):  # interleaved, so load drift hits both alike
            plain.append(await direct(runs, clock) / runs)
            evaluated.append(await harness(data, clock=clock) / runs)
        own, total = statistics.median(plain), statistics.median(evaluated)
        overhead = statistics.median(e - p for e, p in zip(evaluated, plain, strict=True))
        rows += [
            (f"one case run, the ensemble's own run ({label} time)", f"{own * 1e3:.3f} ms",
             "scripted model, fresh ensemble from the factory"),
            (f"one case run through aevaluate ({label} time)", f"{total * 1e3:.3f} ms",
             f"{total / own:.2f}x the ensemble's own run; 3 evaluators, the report"),
            (f"harness overhead per case run ({label} time)", f"{overhead * 1e3:.3f} ms",
             "target < 1 ms"),
        ]  # fmt: skip
    return rows


async def bench_scale(repeats: int) -> list[Row]:
    sizes = (125, 250, 500, 1000)
    wall: dict[int, list[float]] = {size: [] for size in sizes}
    cpu: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(repeats):
        for size in sizes:
            cpu_started = time.process_time()
            wall[size].append(await harness(dataset(size), repeat=3, concurrency=8))
            cpu[size].append((time.process_time() - cpu_started) / (size * 3))
    rows: list[Row] = []
    unit = statistics.median(cpu[sizes[0]])
    for size in sizes:
        each = statistics.median(cpu[size])
        rows.append(
            (
                f"{size:,} cases x 3 repeats, concurrency 8",
                f"{statistics.median(wall[size]):.2f} s",
                f"CPU {each * 1e3:.3f} ms per case run ({each / unit:.2f}x the 125-case figure)",
            )
        )
    return rows


def render(rows: list[Row], seconds: float) -> str:
    head = (
        f"Measured {date.today().isoformat()} on {platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores; run took {seconds:.0f} s "
        f"(`python benchmarks/evals.py --write`).\n\n"
        "| measurement | median | note |\n|---|---|---|\n"
    )
    return head + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows) + "\n"


def record(table: str) -> None:
    path = ROOT / "benchmarks" / "RESULTS.md"
    text = path.read_text()
    section = f"{BEGIN}\n## Evaluations\n\n{table}{END}"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="record in benchmarks/RESULTS.md")
    args = parser.parse_args()
    started = time.perf_counter()

    async def all_rows() -> list[Row]:
        return await bench_overhead(args.repeats) + await bench_scale(max(1, args.repeats // 2))

    rows = asyncio.run(all_rows())
    table = render(rows, time.perf_counter() - started)
    print(table)
    if args.write:
        record(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
