"""The 400-task context chain, this checkout against an earlier commit, side by side in one run.

Usage: ``python benchmarks/chain_compare.py [--baseline REV] [--after REV] [--rounds N]``.

Task ``n`` of one sequential run has every earlier task as context (its prompt holds ``n``
outputs of 20 words); a task's cost is the time from the previous task's end to its own (wall,
and CPU time of the process). Each sample is a fresh interpreter running the chain with the
trace captured (the default) and off; the two trees alternate round by round (the baseline's
``agentensemble`` unpacked with ``git archive``, as ``core_compare.py`` does). Printed: medians
over the samples of the first-50 and last-50 per-task medians, with min-max, and last / first;
then the size of the run's saved trace in each tree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core_compare import ANSWERING, ROOT, fmt, probe, unpack

PROBE = (
    r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from agentensemble import Agent, Ensemble, Task
from agentensemble.events import TaskCompleted
"""
    + ANSWERING
    + r"""
def chain(tasks, capture):
    agent = Agent(role="Writer", goal="g", llm=Answering())
    steps = []
    for n in range(tasks):
        steps.append(Task(description=f"step {n}", agent=agent, context=list(steps)))
    ends = []
    class Ends:
        def on_event(self, event):
            if isinstance(event, TaskCompleted):
                ends.append((time.perf_counter(), time.process_time()))
    ensemble = Ensemble(tasks=steps, listeners=[Ends()], capture=capture)
    start = (time.perf_counter(), time.process_time())
    output = ensemble.run()
    marks = [start, *ends]
    wall = [b[0] - a[0] for a, b in zip(marks, marks[1:])]
    cpu = [b[1] - a[1] for a, b in zip(marks, marks[1:])]
    saved = len(output.trace.to_json(indent=2).encode()) if output.trace is not None else 0
    return wall, cpu, saved

tasks = int(sys.argv[2])
chain(20, "standard")
out = {}
for capture in ("standard", "off"):
    wall, cpu, saved = chain(tasks, capture)
    out[capture] = {
        "saved_bytes": saved,
        "first_wall": statistics.median(wall[:50]), "last_wall": statistics.median(wall[-50:]),
        "first_cpu": statistics.median(cpu[:50]), "last_cpu": statistics.median(cpu[-50:]),
        "whole_wall": sum(wall), "whole_cpu": sum(cpu),
    }
print(json.dumps(out))
"""
)


def sample(tree: Path, tasks: int) -> dict[str, dict[str, float]]:
    result: dict[str, dict[str, float]] = probe(PROBE, tree, str(tasks))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="d996160", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=400)
    parser.add_argument("--after", default=None, help="a commit instead of this checkout")
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        after = ROOT if args.after is None else unpack(args.after, Path(tmp) / "after")
        trees = {"before": unpack(args.baseline, Path(tmp) / "before"), "after": after}
        found: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                found[name].append(sample(tree, args.tasks))
            loads.append(os.getloadavg()[0])
    print(
        f"{args.tasks} tasks; {args.rounds} rounds; load average (1 min) during the run "
        f"{min(loads):.1f}-{max(loads):.1f}"
    )
    print("| capture, figure | before | after | after / before |\n|---|---|---|---|")
    for capture in ("standard", "off"):
        for unit in ("wall", "cpu"):
            rows = {}
            for name in trees:
                first = [s[capture][f"first_{unit}"] for s in found[name]]
                last = [s[capture][f"last_{unit}"] for s in found[name]]
                ratio = [b / a for a, b in zip(first, last, strict=True)]
                rows[name] = (first, last, ratio)
            for label, index, scale, digits, suffix in (
                ("first 50, per task", 0, 1e3, 3, " ms"),
                ("last 50, per task", 1, 1e3, 3, " ms"),
                ("last / first", 2, 1, 1, "x"),
            ):
                before, after = rows["before"][index], rows["after"][index]
                change = statistics.median(after) / statistics.median(before)
                print(
                    f"| {capture}, {label}, {unit} | {fmt(before, scale, digits)}{suffix} "
                    f"| {fmt(after, scale, digits)}{suffix} | {change:.2f}x |"
                )
        for unit in ("wall", "cpu"):
            before = [s[capture][f"whole_{unit}"] for s in found["before"]]
            after = [s[capture][f"whole_{unit}"] for s in found["after"]]
            change = statistics.median(after) / statistics.median(before)
            print(
                f"| {capture}, whole run, {unit} | {fmt(before, 1, 2)} s | {fmt(after, 1, 2)} s "
                f"| {change:.2f}x |"
            )
    sizes = {name: found[name][0]["standard"].get("saved_bytes", 0) for name in trees}
    print(
        f"\nthe run's trace as `trace.save()` writes it: before {sizes['before'] / 1e6:.2f} MB, "
        f"after {sizes['after'] / 1e6:.2f} MB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
