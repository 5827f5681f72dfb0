"""This checkout against an earlier commit, side by side in one run: the core figures of issue 27.

Usage: ``python benchmarks/core_compare.py [--baseline REV] [--rounds N]``.

The baseline's ``agentensemble`` package (``git archive REV``) is unpacked into a temporary
directory; every sample runs in a fresh interpreter with one of the two trees first on
``sys.path``, and rounds alternate the trees, so load drift on a shared machine hits both alike.
Printed: medians with min-max, and after / before ratios of the medians. Figures: import time
(bare, and the line a script starts with), ``run()`` and ``arun()`` per 1-tool scripted run
(wall and CPU), a 1-call run with 1,000 tools, and a 400-task chain where each task has every
earlier task as context (per-task cost of the first and last 50).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import asyncio, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])  # this checkout's benchmarks/: the ensembles under test
from runtime_bench import _one_tool_ensemble, context_chain

def per_run(batch, runs):
    wall, cpu = time.perf_counter(), time.process_time()
    batch(runs)
    return (time.perf_counter() - wall) / runs, (time.process_time() - cpu) / runs

ensemble = _one_tool_ensemble()
loop = asyncio.new_event_loop()

def sync_batch(n):
    for _ in range(n):
        ensemble.run()

def async_batch(n):
    async def go():
        for _ in range(n):
            await ensemble.arun()
    loop.run_until_complete(go())

sync_batch(30); async_batch(30)
found = {"run": [], "arun": []}
for _ in range(3):
    found["run"].append(per_run(sync_batch, 200))
    found["arun"].append(per_run(async_batch, 200))
many = _one_tool_ensemble(1000)
def many_batch(n):
    for _ in range(n):
        many.run()
many_batch(2)
found["many"] = [per_run(many_batch, 10) for _ in range(3)]
per_task = context_chain(400)
found["chain"] = [statistics.median(per_task[:50]), statistics.median(per_task[-50:])]
out = {
    "run_wall": statistics.median(w for w, _ in found["run"]),
    "run_cpu": statistics.median(c for _, c in found["run"]),
    "arun_wall": statistics.median(w for w, _ in found["arun"]),
    "arun_cpu": statistics.median(c for _, c in found["arun"]),
    "many_wall": statistics.median(w for w, _ in found["many"]),
    "many_cpu": statistics.median(c for _, c in found["many"]),
    "chain_first": found["chain"][0],
    "chain_last": found["chain"][1],
}
out["ratio_wall"] = out["run_wall"] / out["arun_wall"]
out["ratio_cpu"] = out["run_cpu"] / out["arun_cpu"]
out["chain_ratio"] = out["chain_last"] / out["chain_first"]
print(json.dumps(out))
"""

IMPORT = (
    "import sys, time; sys.path.insert(0, sys.argv[1]); t = time.perf_counter(); "
    "c = time.process_time(); {statement}; "
    "print(time.perf_counter() - t, time.process_time() - c)"
)
STATEMENTS = {
    "floor": "import pydantic, structlog, tenacity, httpx",
    "import": "import agentensemble",
    "user_line": "from agentensemble import Agent, Ensemble, Task, tool",
}


ANSWERING = r"""
from agentensemble.llm.types import ChatResponse

class Answering:
    model = "bench"
    async def complete(self, messages, **_):
        return ChatResponse(content="answer " * 20, finish_reason="stop")
"""
"""A probe's scripted model answering 20 words at once (no provider, no network): paste it
into a probe's text after its tree is on ``sys.path``."""


def unpack(rev: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", rev, "agentensemble"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def fresh(code: str, tree: Path, *args: str, timeout: float = 900) -> str:
    """What ``code`` prints, run in a fresh interpreter from ``tree`` (its first argument),
    with bytecode caching allowed."""
    return subprocess.run(
        [sys.executable, "-c", code, str(tree), *args],
        env=env(),
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        timeout=timeout,
    ).stdout


def probe(code: str, tree: Path, *args: str) -> Any:
    """The JSON that ``code`` prints last, run as ``fresh`` runs it."""
    return json.loads(fresh(code, tree, *args).strip().splitlines()[-1])


def import_sample(tree: Path, statement: str) -> tuple[float, float]:
    wall, cpu = fresh(IMPORT.format(statement=statement), tree).split()[-2:]
    return float(wall), float(cpu)


def run_sample(tree: Path) -> dict[str, float]:
    result: dict[str, float] = probe(PROBE, tree, str(ROOT / "benchmarks"))
    return result


def fmt(values: list[float], scale: float, digits: int) -> str:
    v = [x * scale for x in values]
    return f"{statistics.median(v):.{digits}f} ({min(v):.{digits}f}-{max(v):.{digits}f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="c54eef2", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": unpack(args.baseline, Path(tmp)), "after": ROOT}
        for tree in trees.values():  # bytecode caches written, not counted
            for statement in STATEMENTS.values():
                import_sample(tree, statement)
        imports: dict[tuple[str, str], list[tuple[float, float]]] = {}
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                for key, statement in STATEMENTS.items():
                    sample = import_sample(tree, statement)
                    imports.setdefault((name, key), []).append(sample)
                runs[name].append(run_sample(tree))
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {args.rounds} rounds")
    print("| figure | before | after | after / before |\n|---|---|---|---|")
    for key in ("import", "user_line"):
        for unit, index in (("wall", 0), ("CPU", 1)):
            cells = []
            for name in trees:
                ours = [s[index] for s in imports[(name, key)]]
                floor = [s[index] for s in imports[(name, "floor")]]
                ratios = [a / b for a, b in zip(ours, floor, strict=True)]
                cells.append(f"{fmt(ours, 1e3, 1)} ms = {fmt(ratios, 1, 2)}x floor")
            label = STATEMENTS[key]
            print(f"| `{label}` ({unit}) / floor | {cells[0]} | {cells[1]} | |")
    scales = {
        "run_wall": (1e3, 3, "ms"),
        "run_cpu": (1e3, 3, "ms"),
        "arun_wall": (1e3, 3, "ms"),
        "arun_cpu": (1e3, 3, "ms"),
        "ratio_wall": (1, 2, "x"),
        "ratio_cpu": (1, 2, "x"),
        "many_wall": (1e3, 2, "ms"),
        "many_cpu": (1e3, 2, "ms"),
        "chain_first": (1e3, 3, "ms"),
        "chain_last": (1e3, 3, "ms"),
        "chain_ratio": (1, 1, "x"),
    }
    for key, (scale, digits, unit) in scales.items():
        before = [r[key] for r in runs["before"]]
        after = [r[key] for r in runs["after"]]
        change = statistics.median(after) / statistics.median(before)
        print(
            f"| {key} | {fmt(before, scale, digits)} {unit} | {fmt(after, scale, digits)} {unit} "
            f"| {change:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
