"""The sync tool's hand-off: this checkout's worker pool against an earlier commit's, one process.

Usage: ``python benchmarks/handoff_compare.py [--baseline REV] [--rounds N] [--calls N]``.

``in_worker_thread`` of a trivial function, awaited on one loop, with the pool of each tree
(the baseline's ``tools/_pool.py`` loaded from ``git show``); batches of ``--calls`` calls,
the pools alternating batch by batch in one process, so load drift hits both alike. Printed:
CPU of the process per call (median, min-max), voluntary and involuntary context switches per
call, and the median of the pair ratios. Both pools run the same ``_sync`` module: only the
hand-off to the worker and its wait for work differ.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentensemble.tools import _pool, _sync  # noqa: E402


def baseline_pool(rev: str) -> object:
    source = subprocess.run(
        ["git", "show", f"{rev}:agentensemble/tools/_pool.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix="_pool.py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location("baseline_pool", file.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DaemonPool()


def echo(value: int) -> int:
    return value


async def batch(calls: int) -> None:
    for _ in range(calls):
        await _sync.in_worker_thread(echo, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    pools = {"before": baseline_pool(args.baseline), "after": _pool.DaemonPool()}
    loop = asyncio.new_event_loop()
    cpu: dict[str, list[float]] = {name: [] for name in pools}
    switches: dict[str, list[tuple[float, float]]] = {name: [] for name in pools}
    with open("/proc/loadavg") as file:
        load_before = file.read().split()[0]
    for pool in pools.values():  # warm-up
        setattr(_sync, "daemon_pool", lambda pool=pool: pool)  # noqa: B010 - a patched name
        loop.run_until_complete(batch(200))
    for number in range(args.rounds):
        order = list(pools.items()) if number % 2 == 0 else list(reversed(pools.items()))
        for name, pool in order:
            setattr(_sync, "daemon_pool", lambda pool=pool: pool)  # noqa: B010 - a patched name
            used = resource.getrusage(resource.RUSAGE_SELF)
            started = time.process_time()
            loop.run_until_complete(batch(args.calls))
            cpu[name].append((time.process_time() - started) / args.calls * 1e6)
            done = resource.getrusage(resource.RUSAGE_SELF)
            switches[name].append(
                (
                    (done.ru_nvcsw - used.ru_nvcsw) / args.calls,
                    (done.ru_nivcsw - used.ru_nivcsw) / args.calls,
                )
            )
    with open("/proc/loadavg") as file:
        load_after = file.read().split()[0]
    print(f"load average {load_before} -> {load_after}; {args.rounds} rounds of {args.calls} calls")
    for name in pools:
        values = cpu[name]
        voluntary = statistics.median(s[0] for s in switches[name])
        involuntary = statistics.median(s[1] for s in switches[name])
        print(
            f"{name}: {statistics.median(values):.1f} us CPU per call "
            f"({min(values):.1f}-{max(values):.1f}); context switches per call "
            f"{voluntary:.2f} voluntary, {involuntary:.2f} involuntary"
        )
    ratios = [a / b for a, b in zip(cpu["after"], cpu["before"], strict=True)]
    print(
        f"after / before, median of pair ratios: {statistics.median(ratios):.2f}x "
        f"({min(ratios):.2f}-{max(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
