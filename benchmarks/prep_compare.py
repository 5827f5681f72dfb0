"""Preparing a context chain before its first task, this checkout against an earlier commit,
side by side in one run.

Usage: ``python benchmarks/prep_compare.py [--baseline REV] [--after REV] [--rounds N]
[--shapes tasks,loops,graphs,ensembles] [--run]``.

Step ``n`` of the chain has every earlier step as context (as in ``chain_compare.py``). The
shape says what the steps are: ``tasks``; ``loops`` (a one-iteration loop whose context and whose
body task name every earlier loop); ``graphs`` (a one-state graph, the same way); ``ensembles``
(a nested ensemble of one task, then a task naming every earlier nested ensemble). What is
timed is what a run does before its first task: building the ``Ensemble`` (its validators check
the structure, tools, team and memory wiring) and ``prepare_run`` (the structure checked again,
inputs, every task prepared), with the trace off; CPU time of the process and wall time, for
``n`` = 50, 200, 400, SEQUENTIAL and PARALLEL. Each sample is a fresh interpreter taking the
median of 5 repeats; the two trees alternate round by round (the baseline's ``agentensemble``
unpacked with ``git archive``, as ``core_compare.py`` does). Printed: medians over the samples
with min-max, and the cost per step (the median divided by ``n``): flat from 50 to 400 when
the work per step does not grow with the steps before it.

``--run`` also times one whole run after the preparation (deterministic handler tasks, no
model): a PARALLEL run's start and its order of work, per step.
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

SIZES = (50, 200, 400)
WORKFLOWS = ("sequential", "parallel")
SHAPES = ("tasks", "loops", "graphs", "ensembles")

PROBE = (
    r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from agentensemble import Agent, Edge, Ensemble, Graph, Loop, Task, Workflow
from agentensemble.workflows.prepare import prepare_run
"""
    + ANSWERING
    + r"""
agent = Agent(role="Writer", goal="g", llm=Answering())
RUN = sys.argv[5] == "1"

def answer(ctx):
    return "done"

def task(description, context):
    if RUN:
        return Task(description=description, handler=answer, context=context)
    return Task(description=description, agent=agent, context=context)

def chain(shape, n_steps):
    steps = []
    named = []
    for n in range(n_steps):
        if shape == "tasks":
            step = task(f"step {n}", list(steps))
        elif shape == "loops":
            body = [task(f"step {n}", list(named))]
            step = Loop(name=f"l{n}", body=body, max_iterations=1, context=list(named))
        elif shape == "graphs":
            states = {"s": task(f"step {n}", list(named))}
            step = Graph(name=f"g{n}", start="s", states=states,
                         edges=[Edge("s", Graph.END)], context=list(named))
        else:  # a nested ensemble, then a task naming every earlier one
            inner = Ensemble(tasks=[task(f"inner {n}", [])], capture="off")
            steps.append(inner)
            named.append(inner)
            step = task(f"step {n}", list(named))
        steps.append(step)
        named.append(step)
    return steps

def timed(work):
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu

out = {}
for shape in sys.argv[4].split(","):
    for workflow in sys.argv[3].split(","):
        flow = Workflow[workflow.upper()]
        for size in map(int, sys.argv[2].split(",")):
            steps = chain(shape, size)
            def prepare():
                prepare_run(Ensemble(tasks=steps, capture="off", workflow=flow), {})
            prepare()
            times = [timed(prepare) for _ in range(5)]
            key = f"{shape} {workflow} {size}"
            out[key] = {
                "wall": statistics.median(t[0] for t in times),
                "cpu": statistics.median(t[1] for t in times),
            }
            if RUN:
                ensemble = Ensemble(tasks=chain(shape, size), capture="off", workflow=flow)
                ensemble.run()
                runs = [timed(ensemble.run) for _ in range(3)]
                out[key]["run wall"] = statistics.median(t[0] for t in runs)
                out[key]["run cpu"] = statistics.median(t[1] for t in runs)
print(json.dumps(out))
"""
)


def sample(
    tree: Path, sizes: str, workflows: str, shapes: str, run: bool
) -> dict[str, dict[str, float]]:
    result: dict[str, dict[str, float]] = probe(
        PROBE, tree, sizes, workflows, shapes, "1" if run else "0"
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="a56627c", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--workflows", default=",".join(WORKFLOWS))
    parser.add_argument("--shapes", default="tasks", help=f"any of {','.join(SHAPES)}")
    parser.add_argument("--run", action="store_true", help="also time one whole run")
    parser.add_argument("--after", default=None, help="a commit instead of this checkout")
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        after = ROOT if args.after is None else unpack(args.after, Path(tmp) / "after")
        trees = {"before": unpack(args.baseline, Path(tmp) / "before"), "after": after}
        found: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                found[name].append(sample(tree, args.sizes, args.workflows, args.shapes, args.run))
            loads.append(os.getloadavg()[0])
    print(
        f"{args.rounds} rounds; load average (1 min) during the run "
        f"{min(loads):.1f}-{max(loads):.1f}"
    )
    print(
        "| chain, per run | before | after | after / before | per step, before / after |\n"
        "|---|---|---|---|---|"
    )
    for key in found["before"][0]:
        size = int(key.split()[-1])
        for unit in found["before"][0][key]:
            before = [s[key][unit] for s in found["before"]]
            after_ = [s[key][unit] for s in found["after"]]
            change = statistics.median(after_) / statistics.median(before)
            print(
                f"| {key} steps, {unit} | {fmt(before, 1e3, 2)} ms | {fmt(after_, 1e3, 2)} ms "
                f"| {change:.2f}x | {statistics.median(before) / size * 1e6:.0f} / "
                f"{statistics.median(after_) / size * 1e6:.0f} us |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
