"""The sync tool's hand-off: this checkout's against an earlier commit's, in one process.

Usage: ``python benchmarks/handoff_compare.py [--baseline REV] [--rounds N] [--calls N] [--runs]``.

``in_worker_thread`` of a trivial function, awaited on one loop, as each tree has it: the
baseline's ``tools/_sync.py`` and ``tools/_pool.py`` loaded from ``git show`` (its
``in_worker_thread`` handing work to its own pool), this checkout's imported; batches of
``--calls`` calls, the trees alternating batch by batch in one process, so load drift hits both
alike. Printed: CPU of the process per call (median, min-max), voluntary and involuntary
context switches per call, and the median of the pair ratios.

``--runs``: whole 1-tool scripted ``run()``s instead of bare calls (batches of ``--calls``
runs, 100 by default), every module that imported ``in_worker_thread`` pointed at one tree's or
the other's batch by batch: what the hand-off is worth in a run, in one warm process.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentensemble.tools import _sync  # noqa: E402


def baseline_module(rev: str, name: str) -> Any:
    """``agentensemble/tools/<name>.py`` as it is at ``rev``, loaded as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{rev}:agentensemble/tools/{name}.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=f"{name}.py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location(f"baseline{name}", file.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def baseline_hand_off(rev: str) -> Callable[..., Any]:
    """The baseline's ``in_worker_thread``, handing work to the baseline's own pool."""
    pool = baseline_module(rev, "_pool").DaemonPool()
    sync = baseline_module(rev, "_sync")
    sync.daemon_pool = lambda: pool
    return sync.in_worker_thread  # type: ignore[no-any-return]


def echo(value: int) -> int:
    return value


async def batch(hand_off: Callable[..., Any], calls: int) -> None:
    for _ in range(calls):
        await hand_off(echo, 1)


def runs_with(hand_off: Callable[..., Any], runs: int) -> None:
    """``runs`` whole 1-tool ``run()``s with ``hand_off`` as every module's ``in_worker_thread``."""
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if (
            name.startswith("agentensemble.")
            and name != _sync.__name__
            and (getattr(module, "in_worker_thread", None) in HAND_OFFS)
        ):
            module.in_worker_thread = hand_off  # type: ignore[attr-defined]
    for _ in range(runs):
        ENSEMBLE[0].run()


HAND_OFFS: list[Callable[..., Any]] = []
ENSEMBLE: list[Any] = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--calls", type=int, default=None)
    parser.add_argument("--runs", action="store_true", help="whole 1-tool run()s")
    args = parser.parse_args()
    trees = {"before": baseline_hand_off(args.baseline), "after": _sync.in_worker_thread}
    HAND_OFFS.extend(trees.values())
    loop = asyncio.new_event_loop()
    if args.runs:
        sys.path.insert(1, str(ROOT / "benchmarks"))
        from runtime_bench import _one_tool_ensemble

        ENSEMBLE.append(_one_tool_ensemble())
        args.calls = args.calls or 100
        unit = "run"

        def measure(hand_off: Callable[..., Any], calls: int) -> None:
            runs_with(hand_off, calls)
    else:
        args.calls = args.calls or 2000
        unit = "call"

        def measure(hand_off: Callable[..., Any], calls: int) -> None:
            loop.run_until_complete(batch(hand_off, calls))

    cpu: dict[str, list[float]] = {name: [] for name in trees}
    switches: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    with open("/proc/loadavg") as file:
        load_before = file.read().split()[0]
    for hand_off in trees.values():  # warm-up
        measure(hand_off, 200)
    for number in range(args.rounds):
        order = list(trees.items()) if number % 2 == 0 else list(reversed(trees.items()))
        for name, hand_off in order:
            used = resource.getrusage(resource.RUSAGE_SELF)
            started = time.process_time()
            measure(hand_off, args.calls)
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
    print(
        f"load average {load_before} -> {load_after}; {args.rounds} rounds of {args.calls} {unit}s"
    )
    for name in trees:
        values = cpu[name]
        voluntary = statistics.median(s[0] for s in switches[name])
        involuntary = statistics.median(s[1] for s in switches[name])
        print(
            f"{name}: {statistics.median(values):.1f} us CPU per {unit} "
            f"({min(values):.1f}-{max(values):.1f}); context switches per {unit} "
            f"{voluntary:.2f} voluntary, {involuntary:.2f} involuntary"
        )
    ratios = [a / b for a, b in zip(cpu["after"], cpu["before"], strict=True)]
    print(
        f"after / before, median of pair ratios: {statistics.median(ratios):.2f}x "
        f"({min(ratios):.2f}-{max(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
