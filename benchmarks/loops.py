"""Framework overhead of loops, graphs and for_each, with a scripted model (no network).

Usage: ``python benchmarks/loops.py [--repeats N] [--write]``.

- A Loop of 2 tasks run 50 times vs the same 100 task runs as a flat SEQUENTIAL list; a Graph
  ping-ponging between 2 states for 100 steps vs 100 flat tasks (target: within 10 %).
- ``for_each`` over 100, 300 and 1,000 items: time and peak traced memory per item, which must
  stay flat as the list grows (linear, not quadratic).

Figures are medians of runs taken interleaved (flat, loop, graph in turn), so load drift hits
all alike; ratios compare runs of the same round. ``--write`` records the table in the loops
section of ``benchmarks/RESULTS.md`` (between its markers; the rest is left alone).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentensemble import Edge, Ensemble, Graph, Loop, Task  # noqa: E402
from agentensemble.testing import FunctionChatModel  # noqa: E402

BEGIN, END = "<!-- loops:begin -->", "<!-- loops:end -->"
RUNS = 100  # task runs per ensemble in the loop and graph comparisons
Row = tuple[str, str, str]


def model() -> FunctionChatModel:
    return FunctionChatModel(lambda messages, tools: "ok")


def flat() -> Ensemble:
    tasks = [Task(name=f"t{i}", description=f"step {i % 2}") for i in range(RUNS)]
    return Ensemble(tasks=tasks, llm=model(), capture="off")


def loop(feedback: bool = False) -> Ensemble:
    body = [Task(name="a", description="step 0"), Task(name="b", description="step 1")]
    steps = Loop(name="l", body=body, max_iterations=RUNS // 2, feedback=feedback)
    return Ensemble(tasks=[steps], llm=model(), capture="off")


def graph() -> Ensemble:
    states = {"a": Task(description="step 0"), "b": Task(description="step 1")}
    edges = [Edge("a", "b"), Edge("b", "a")]
    steps = Graph(name="g", start="a", states=states, edges=edges, max_steps=RUNS, feedback=False)
    return Ensemble(tasks=[steps], llm=model(), capture="off")


def fan_out(count: int) -> tuple[Ensemble, dict[str, Any]]:
    task = Task(name="m", description="Summarise {item}", for_each="items")
    ensemble = Ensemble(tasks=[task], llm=model(), capture="off", max_concurrency=50)
    return ensemble, {"items": [f"document {i}" for i in range(count)]}


def timed(build: Callable[[], Ensemble]) -> float:
    ensemble = build()
    started = time.perf_counter()
    output = ensemble.run()
    elapsed = time.perf_counter() - started
    assert len(output.task_outputs) == RUNS, len(output.task_outputs)
    return elapsed


def bench_steps(repeats: int) -> list[Row]:
    timed(flat)  # warm-up
    samples: dict[str, list[float]] = {"flat": [], "loop": [], "loop_fb": [], "graph": []}
    builders = {"flat": flat, "loop": loop, "loop_fb": lambda: loop(True), "graph": graph}
    for _ in range(repeats):
        for name, build in builders.items():
            samples[name].append(timed(build))

    def ratio(name: str) -> float:
        return statistics.median(s / f for s, f in zip(samples[name], samples["flat"], strict=True))

    def per_run(name: str) -> str:
        return f"{statistics.median(samples[name]) / RUNS * 1000:.3f} ms"

    base = statistics.median(samples["flat"])
    iteration = (statistics.median(samples["loop"]) - base) / (RUNS // 2) * 1000
    step = (statistics.median(samples["graph"]) - base) / RUNS * 1000
    return [
        (f"{RUNS} tasks as a flat SEQUENTIAL list, per task", per_run("flat"), "the unit"),
        (
            f"Loop of 2 tasks x {RUNS // 2} iterations, per task",
            per_run("loop"),
            f"{ratio('loop'):.2f}x flat (target <= 1.10x); {iteration:+.3f} ms per iteration",
        ),
        (
            "same Loop with feedback=True, per task",
            per_run("loop_fb"),
            f"{ratio('loop_fb'):.2f}x flat (longer prompts: the previous answer and remarks)",
        ),
        (
            f"Graph a <-> b for {RUNS} steps, per task",
            per_run("graph"),
            f"{ratio('graph'):.2f}x flat (target <= 1.10x); {step:+.3f} ms per step",
        ),
    ]


def bench_fan_out(repeats: int) -> list[Row]:
    rows: list[Row] = []
    per_item: dict[int, float] = {}
    memory: dict[int, float] = {}
    for count in (100, 300, 1000):
        times: list[float] = []
        for _ in range(repeats):
            ensemble, inputs = fan_out(count)
            started = time.perf_counter()
            output = ensemble.run(inputs)
            times.append(time.perf_counter() - started)
            assert len(output.task_outputs) == count
        ensemble, inputs = fan_out(count)
        tracemalloc.start()
        ensemble.run(inputs)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        per_item[count] = statistics.median(times) / count * 1000
        memory[count] = peak / count / 1024
        rows.append(
            (
                f"for_each over {count} items, per item",
                f"{per_item[count]:.3f} ms",
                f"peak traced memory {memory[count]:.1f} KiB per item",
            )
        )
    rows.append(
        (
            "for_each 1,000 vs 100 items, per item",
            f"{per_item[1000] / per_item[100]:.2f}x time",
            f"{memory[1000] / memory[100]:.2f}x memory (linear: about 1x each)",
        )
    )
    return rows


def render(rows: list[Row], seconds: float) -> str:
    lines = [
        f"Measured {date.today().isoformat()} on {platform.machine()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} cores; run took {seconds:.0f} s "
        "(`python benchmarks/loops.py --write`).\n",
        "| measurement | median | note |",
        "|---|---|---|",
        *(f"| {a} | {b} | {c} |" for a, b, c in rows),
    ]
    return "\n".join(lines) + "\n"


def record(table: str) -> None:
    path = ROOT / "benchmarks" / "RESULTS.md"
    text = path.read_text()
    section = f"{BEGIN}\n## Loops, graphs and for_each\n\n{table}{END}"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--write", action="store_true", help="record in benchmarks/RESULTS.md")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = [*bench_steps(args.repeats), *bench_fan_out(max(1, args.repeats // 3))]
    table = render(rows, time.perf_counter() - started)
    print(table)
    if args.write:
        record(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
