"""Instructions a 1-tool ``run()`` costs, counted by callgrind: the figure RESULTS.md reads first.

One process per tree and count: 30 warm-up ``run()``s of ``runtime_bench._one_tool_ensemble``
(a sync ``@tool``, a scripted model), then N more; the same process with N = 0 is subtracted,
so start-up, import and warm-up cancel out. Callgrind counts every thread of the process (the
sync tool's worker too) and is not moved by the load of a shared machine; counts vary by a few
thousand a run between identical processes (the garbage collector runs at other points).

    python benchmarks/run_instructions.py /path/to/before /path/to/after [--runs 100]

Needs ``valgrind``; each tree takes about two minutes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

WARM_UP = 30
CALLGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")
PROBE = """
import sys
sys.path.insert(0, {tree!r})
sys.path.insert(0, {benchmarks!r})
from runtime_bench import _one_tool_ensemble
ensemble = _one_tool_ensemble()
for _ in range({warm}):
    ensemble.run()
for _ in range({runs}):
    ensemble.run()
"""


def count(tree: Path, runs: int) -> int:
    """Instructions of one process making ``WARM_UP + runs`` runs from ``tree``."""
    code = PROBE.format(
        tree=str(tree), benchmarks=str(tree / "benchmarks"), warm=WARM_UP, runs=runs
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tree)  # bytecode
    done = subprocess.run(
        [*CALLGRIND, sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
    )
    line = next(x for x in done.stderr.splitlines() if "Collected" in x)
    return int(line.split()[-1])


def per_run(tree: Path, runs: int) -> float:
    """Instructions a run: ``runs`` runs minus none, in processes of their own."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        many, none = pool.map(lambda n: count(tree, n), (runs, 0))
    return (many - none) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path, help="source trees (first = before)")
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    figures = [(tree, per_run(tree.resolve(), args.runs)) for tree in args.trees]
    base = figures[0][1]
    print("| tree | instructions a run | against the first |\n|---|---|---|")
    for tree, value in figures:
        print(f"| `{tree}` | {value / 1000:,.1f}K | {value / base:.3f}x |")


if __name__ == "__main__":
    main()
