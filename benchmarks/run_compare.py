"""``run()`` and ``arun()`` of one 1-tool scripted run: this checkout against an earlier commit.

Usage: ``python benchmarks/run_compare.py [--baseline REV] [--rounds N]``.

The run figure of ``core_compare.py`` alone, with more batches per sample, for a shared machine:
every sample is a fresh interpreter with one tree first on ``sys.path`` (the baseline's
``agentensemble`` unpacked with ``git archive``), the trees alternate round by round, and each
sample runs 50 warm-up runs, then 15 pairs of batches (100 ``run()``, then 100 ``arun()``
awaited on one long-lived loop). Printed, CPU of the process per run: the median of the
samples' medians (with their min-max), the fastest batch of all samples (the closest to an
idle machine), and ``run()`` / ``arun()`` as the median of each sample's pair ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from core_compare import ROOT, probe, unpack

PROBE = r"""
import asyncio, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])  # this checkout's benchmarks/: the ensemble under test
from runtime_bench import _one_tool_ensemble
import agentensemble
assert agentensemble.__file__.startswith(sys.argv[1]), agentensemble.__file__

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

sync_batch(50); async_batch(50)
found = {"run": [], "arun": []}
for _ in range(15):
    for key, batch in (("run", sync_batch), ("arun", async_batch)):
        started = time.process_time()
        batch(100)
        found[key].append((time.process_time() - started) / 100)
ratios = [s / a for s, a in zip(found["run"], found["arun"])]
print(json.dumps({
    "run": [statistics.median(found["run"]), min(found["run"])],
    "arun": [statistics.median(found["arun"]), min(found["arun"])],
    "ratio": statistics.median(ratios),
}))
"""


def sample(tree: Path) -> dict[str, object]:
    result: dict[str, object] = probe(PROBE, tree, str(ROOT / "benchmarks"))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", default="main", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": unpack(args.baseline, Path(tmp)), "after": ROOT}
        samples: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
        for round_ in range(args.rounds):
            order = list(trees.items())
            for name, tree in order if round_ % 2 == 0 else order[::-1]:
                samples[name].append(sample(tree))
    load_after = os.getloadavg()
    print(
        f"load average {load_before[0]:.1f} -> {load_after[0]:.1f}; {args.rounds} rounds; "
        "CPU of the process per run"
    )
    print("| figure | before | after | after / before |\n|---|---|---|---|")
    medians: dict[tuple[str, str], float] = {}
    fastest: dict[tuple[str, str], float] = {}
    for key in ("run", "arun"):
        cells = []
        for name in trees:
            values = [s[key][0] for s in samples[name]]  # type: ignore[index]
            medians[(name, key)] = statistics.median(values)
            fastest[(name, key)] = min(s[key][1] for s in samples[name])  # type: ignore[index]
            cells.append(
                f"{medians[(name, key)] * 1e3:.3f} ms "
                f"({min(values) * 1e3:.3f}-{max(values) * 1e3:.3f})"
            )
        change = medians[("after", key)] / medians[("before", key)]
        print(f"| `{key}()`, median of sample medians | {cells[0]} | {cells[1]} | {change:.2f}x |")
        low = [fastest[(name, key)] * 1e3 for name in trees]
        change = low[1] / low[0]
        print(f"| `{key}()`, fastest batch | {low[0]:.3f} ms | {low[1]:.3f} ms | {change:.2f}x |")
    cells = []
    for name in trees:
        ratios = [float(s["ratio"]) for s in samples[name]]  # type: ignore[arg-type]
        cells.append(f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")
    print(f"| `run()` / `arun()`, median of pair ratios | {cells[0]} | {cells[1]} | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
