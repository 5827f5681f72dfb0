"""SQLite memory search, two source trees side by side on the same store file, in one run.

Usage: ``python benchmarks/memory_compare.py STORE.sqlite OLD_ROOT NEW_ROOT [--rounds 2]
[--cycles 10]``. ``STORE.sqlite`` is a store filled by ``benchmarks/memory.py``'s notes (scope
``customers``; its vectors already stored if ``--embedder local``). Each measurement runs in a
fresh process on a fresh copy of the file, alternating the trees round by round (so load drift
on a shared machine hits both alike): the first search (reads the scope's vectors), 30 searches
with no write between them, then ``--cycles`` times an ``add`` followed by a search (what task
memory does). Medians of wall and CPU time; ``OLD_ROOT`` is, for instance, ``git archive main
agentensemble | tar -x -C /tmp/old``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def child(path: str, embedder: str, cycles: int) -> dict[str, Any]:
    """One tree's figures (run with that tree first on ``sys.path``)."""
    import random

    from agentensemble.memory import SQLiteMemory  # from the tree first on sys.path

    sys.path.insert(1, str(HERE))
    import memory as bench  # its own sys.path entry comes after: agentensemble is loaded

    chosen = None
    if embedder == "local":
        from agentensemble.memory.embedders import LocalEmbedder

        chosen = LocalEmbedder()
    store = SQLiteMemory(path, embedder=chosen)
    queries = [bench.question(random.Random(q)) for q in range(30)]
    started = time.perf_counter()
    store.search(bench.SCOPE, queries[0])
    first = time.perf_counter() - started

    def timed(query: str) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        store.search(bench.SCOPE, query)
        return time.perf_counter() - wall, time.process_time() - cpu

    still = []
    for query in queries:
        still.append(timed(query))
    rng, after = random.Random(11), []
    for n, query in enumerate(queries[:cycles]):
        store.add(bench.SCOPE, bench.note(rng, 500_000 + n))
        after.append(timed(query))
    store.close()
    return {
        "tree": str(Path(sys.modules["agentensemble"].__file__ or "").parent.parent),
        "first_ms": first * 1000,
        "search_ms": statistics.median(w for w, _ in still) * 1000,
        "search_cpu_ms": statistics.median(c for _, c in still) * 1000,
        "after_add_ms": statistics.median(w for w, _ in after) * 1000,
        "after_add_cpu_ms": statistics.median(c for _, c in after) * 1000,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--embedder", choices=["lexical", "local"], default="lexical")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, args.child[0])
        print(json.dumps(child(args.child[1], args.embedder, args.cycles)))
        return 0
    results: dict[str, list[dict[str, Any]]] = {"old": [], "new": []}
    loads = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.rounds):
            for name in ("old", "new"):
                copy = Path(folder) / f"{name}.sqlite"
                shutil.copyfile(args.store, copy)
                root = args.old if name == "old" else args.new
                command = [sys.executable, __file__, args.store, args.old, args.new]
                command += ["--embedder", args.embedder, "--cycles", str(args.cycles)]
                done = subprocess.run(
                    [*command, "--child", root, str(copy)],
                    capture_output=True,
                    text=True,
                    timeout=3600,
                    check=True,
                )
                results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
                uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout
                loads.append(uptime.rsplit("load average:", 1)[-1].strip().split(",")[0])
                print(name, json.dumps(results[name][-1]), flush=True)
    print(f"embedder: {args.embedder}; 1-min load after each measurement: {', '.join(loads)}")
    print("| figure (median of rounds) | old | new | new/old |")
    print("|---|---|---|---|")
    for key in list(results["old"][0])[1:]:  # the tree is the column
        old = statistics.median(r[key] for r in results["old"])
        new = statistics.median(r[key] for r in results["new"])
        print(f"| {key} | {old:.2f} | {new:.2f} | {new / old:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
