"""What saving a run's output as JSON costs: this checkout against an earlier commit.

Usage: ``python benchmarks/saveable_json.py [--baseline REV] [--rounds N] [--turns N]``.

The output is a real run's: one task of ``--turns`` model turns, each but the last calling a
tool that returns a dict (kept as ``structured_output``), with the trace (``capture="standard"``).
Durable runs checkpoint outputs like this one (``model_dump(mode="json")``); ``to JSON`` is
``model_dump_json()``. The baseline's package (``git archive REV``) is unpacked into a temporary
directory; every sample runs in a fresh interpreter with one of the two trees first on
``sys.path``, and rounds alternate the trees. Printed: medians with min-max (wall and CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from core_compare import ROOT, unpack

PROBE = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
turns = int(sys.argv[2])
from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.testing import ScriptedChatModel, text, tool_call

@tool
def lookup(city: str) -> dict:
    "Facts about a city."
    return {"city": city, "population": 1234567, "notes": ["a river", "a bridge", "caf\u00e9s"]}

script = [tool_call("lookup", {"city": f"city {n}"}) for n in range(turns - 1)]
model = ScriptedChatModel([*script, text("a report about every city " * 20)])
agent = Agent(role="Researcher", goal="Find facts", tools=[lookup])
task = Task(description="Report on the cities", agent=agent)
output = Ensemble(tasks=[task], llm=model).run()

def per_call(fn, n):
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        fn()
    return (time.perf_counter() - wall) / n, (time.process_time() - cpu) / n

found = {"json": [], "dump": []}
per_call(output.model_dump_json, 50)
for _ in range(7):
    found["json"].append(per_call(output.model_dump_json, 100))
    found["dump"].append(per_call(lambda: output.model_dump(mode="json"), 100))
out = {f"{k}_{name}": statistics.median(s[i] for s in v) for k, v in found.items()
       for i, name in ((0, "wall"), (1, "cpu"))}
out["size"] = len(output.model_dump_json())
print(json.dumps(out))
"""


def _sample(tree: Path, turns: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tree), str(turns)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": unpack(args.baseline, Path(tmp)), "after": ROOT}
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                samples[name].append(_sample(tree, args.turns))
    with open("/proc/loadavg") as file:
        load = file.read().split()[:3]
    print(f"{args.turns}-turn output, {args.rounds} rounds, load {' '.join(load)}")
    print(f"JSON size: {samples['after'][0]['size']:,} characters")
    for key, label in (
        ("json_wall", "model_dump_json, wall"),
        ("json_cpu", "model_dump_json, CPU"),
        ("dump_wall", "model_dump(mode='json'), wall"),
        ("dump_cpu", "model_dump(mode='json'), CPU"),
    ):
        cells = []
        for name in trees:
            values = [s[key] * 1000 for s in samples[name]]
            cells.append(
                f"{name} {statistics.median(values):.3f} ms ({min(values):.3f}-{max(values):.3f})"
            )
        before = statistics.median(s[key] for s in samples["before"])
        after = statistics.median(s[key] for s in samples["after"])
        print(f"{label}: {' | '.join(cells)} | {after / before:.2f}x")


if __name__ == "__main__":
    main()
