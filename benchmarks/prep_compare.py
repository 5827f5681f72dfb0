"""Preparing a context chain before its first task, this checkout against an earlier commit,
side by side in one run.

Usage: ``python benchmarks/prep_compare.py [--baseline REV] [--after REV] [--rounds N]``.

Task ``n`` of the chain has every earlier task as context (as in ``chain_compare.py``). What is
timed is what a run does before its first task: building the ``Ensemble`` (its validators check
the structure, tools, team and memory wiring) and ``prepare_run`` (the structure checked again,
inputs, every task prepared), with the trace off; CPU time of the process and wall time, for
``n`` = 50, 200, 400, SEQUENTIAL and PARALLEL. Each sample is a fresh interpreter taking the
median of 5 repeats; the two trees alternate round by round (the baseline's ``agentensemble``
unpacked with ``git archive``, as ``core_compare.py`` does). Printed: medians over the samples
with min-max.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core_compare import ROOT, fmt, probe, unpack

SIZES = (50, 200, 400)
WORKFLOWS = ("sequential", "parallel")

PROBE = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from agentensemble import Agent, Ensemble, Task, Workflow
from agentensemble.llm.types import ChatResponse
from agentensemble.workflows.prepare import prepare_run

class Answering:
    model = "bench"
    async def complete(self, messages, **_):
        return ChatResponse(content="answer " * 20, finish_reason="stop")

agent = Agent(role="Writer", goal="g", llm=Answering())

def chain(tasks):
    steps = []
    for n in range(tasks):
        steps.append(Task(description=f"step {n}", agent=agent, context=list(steps)))
    return steps

def prepare(steps, workflow):
    wall, cpu = time.perf_counter(), time.process_time()
    ensemble = Ensemble(tasks=steps, capture="off", workflow=workflow)
    prepare_run(ensemble, {})
    return time.perf_counter() - wall, time.process_time() - cpu

out = {}
for workflow in sys.argv[3].split(","):
    for tasks in map(int, sys.argv[2].split(",")):
        steps = chain(tasks)
        prepare(steps, Workflow[workflow.upper()])
        times = [prepare(steps, Workflow[workflow.upper()]) for _ in range(5)]
        out[f"{workflow} {tasks}"] = {
            "wall": statistics.median(t[0] for t in times),
            "cpu": statistics.median(t[1] for t in times),
        }
print(json.dumps(out))
"""


def sample(tree: Path, sizes: str, workflows: str) -> dict[str, dict[str, float]]:
    result: dict[str, dict[str, float]] = probe(PROBE, tree, sizes, workflows)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="a56627c", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--workflows", default=",".join(WORKFLOWS))
    parser.add_argument("--after", default=None, help="a commit instead of this checkout")
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        after = ROOT if args.after is None else unpack(args.after, Path(tmp) / "after")
        trees = {"before": unpack(args.baseline, Path(tmp) / "before"), "after": after}
        found: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                found[name].append(sample(tree, args.sizes, args.workflows))
            loads.append(os.getloadavg()[0])
    print(
        f"{args.rounds} rounds; load average (1 min) during the run "
        f"{min(loads):.1f}-{max(loads):.1f}"
    )
    print("| chain, preparation per run | before | after | after / before |\n|---|---|---|---|")
    for key in found["before"][0]:
        for unit in ("cpu", "wall"):
            before = [s[key][unit] for s in found["before"]]
            after_ = [s[key][unit] for s in found["after"]]
            change = statistics.median(after_) / statistics.median(before)
            print(
                f"| {key} tasks, {unit} | {fmt(before, 1e3, 2)} ms | {fmt(after_, 1e3, 2)} ms "
                f"| {change:.2f}x |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
