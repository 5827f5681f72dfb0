"""Where a durable worker's CPU goes, per run: by thread, and by the database calls DBOS makes.

Usage: ``python benchmarks/durable_profile.py [--runs 200] [--concurrency 16] [--database URL]``.
A worker of ``_durable_app`` (``benchmarks/durable.py``'s throughput app: two tasks, three model
turns of 50 ms and a tool call) runs in a process of its own with thread-CPU timers around
DBOS's system-database calls (``time.thread_time`` inside the call: exact for these synchronous
calls, whatever the other threads do); this process submits ``--runs`` runs with
``DurableClient`` and waits for them. Printed per run: the worker's CPU by thread (from each
thread's CPU clock), the timed calls, and the statements each run sends to the database. The
timers cost little, but the figures are this machine's at its load (printed): compare
variants in one sitting. SQLite by default (a fresh file in a temporary directory).
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# DBOS's system-database calls worth timing (pinned DBOS minor: a renamed one is just not shown)
CALLS = (
    "record_operation_result",
    "update_workflow_outcome",
    "start_queued_workflows",
    "_is_latest_version",
    "get_workflow_statuses",
    "get_queue",
    "list_queues",
    "check_operation_execution",
)


def _owner(filename: str, name: str) -> str:
    """Whose code a profiled function is: ours, DBOS's, SQLAlchemy's, the driver's, Python's."""
    if filename == "~":  # a builtin: the driver's own, else its caller's (split later)
        return "driver (sqlite3 / psycopg)" if "sqlite3" in name or "psycopg" in name else ""
    for part, owner in (
        ("/agentensemble/durable/", "ours: agentensemble/durable"),
        ("/agentensemble/", "ours: agentensemble (the run itself)"),
        ("/dbos/", "DBOS"),
        ("/sqlalchemy/", "SQLAlchemy"),
        ("/psycopg", "driver (sqlite3 / psycopg)"),
        ("/sqlite3/", "driver (sqlite3 / psycopg)"),
        ("/asyncio/", "asyncio"),
        ("/concurrent/", "threads (concurrent, threading, queue)"),
        ("/threading.py", "threads (concurrent, threading, queue)"),
        ("/queue.py", "threads (concurrent, threading, queue)"),
        ("/pydantic", "pydantic"),
        ("/opentelemetry/", "opentelemetry"),
    ):
        if part in filename:
            return owner
    return "other (stdlib, logging, json, pickle...)"


def _split(stats: dict[Any, Any]) -> dict[str, float]:
    """Seconds of own time by owner; a builtin's time goes to its callers' owners, in the
    shares of its calls' time from each."""
    found: collections.Counter[str] = collections.Counter()
    for (filename, _line, name), (_cc, _nc, tottime, _ct, callers) in stats.items():
        owner = _owner(filename, name)
        if owner:
            found[owner] += tottime
            continue
        shares = {key: value[2] for key, value in callers.items()} if callers else {}
        whole = sum(shares.values())
        if not whole:
            found["other (stdlib, logging, json, pickle...)"] += tottime
            continue
        for (c_file, _c_line, c_name), part in shares.items():
            found[_owner(c_file, c_name) or "other (stdlib, logging, json, pickle...)"] += (
                tottime * part / whole
            )
    return dict(found)


def _where(key: tuple[str, int, str]) -> str:
    return f"{key[0].rsplit('/', 2)[-1]}:{key[1]}({key[2]})"


def _callers(callers: dict[Any, Any]) -> list[str]:
    """The three callers giving a function the most of its own time."""
    ranked = sorted(callers.items(), key=lambda kv: -kv[1][2])[:3]
    return [_where(key) for key, _value in ranked]


def _profiling() -> tuple[Callable[[], None], Callable[[], dict[str, Any]]]:
    """A cProfile per thread (threads started from now on, and this one): start, and a
    snapshot of every thread's profile merged (taken under the GIL while they run)."""
    import cProfile

    profiles: list[cProfile.Profile] = []
    original_run = threading.Thread.run

    def run(self: threading.Thread) -> None:
        profile = cProfile.Profile(time.thread_time)
        profiles.append(profile)
        profile.enable()
        try:
            original_run(self)
        finally:
            profile.disable()

    def start() -> None:
        for profile in profiles:
            profile.disable()
        profiles.clear()
        threading.Thread.run = run  # type: ignore[method-assign]

    def snapshot() -> dict[str, Any]:
        merged: dict[Any, Any] = {}
        for profile in list(profiles):
            profile.snapshot_stats()
            for key, (cc, nc, tt, ct, callers) in profile.stats.items():
                if key in merged:
                    old = merged[key]
                    both = dict(old[4])
                    for caller, value in callers.items():
                        if caller in both:
                            both[caller] = tuple(
                                a + b for a, b in zip(both[caller], value, strict=True)
                            )
                        else:
                            both[caller] = value
                    merged[key] = (old[0] + cc, old[1] + nc, old[2] + tt, old[3] + ct, both)
                else:
                    merged[key] = (cc, nc, tt, ct, dict(callers))
        top = sorted(merged.items(), key=lambda kv: -kv[1][2])[:25]
        return {
            "owners": _split(merged),
            "top": [[_where(k), v[2], v[1], _callers(v[4])] for k, v in top],
            "ours": [
                [_where(k), v[2], v[1], _callers(v[4])]
                for k, v in sorted(merged.items(), key=lambda kv: -kv[1][2])
                if "/agentensemble/durable/" in k[0]
            ][:12],
        }

    return start, snapshot


def _worker(out: str) -> None:
    """The worker, timed; writes its figures to ``out`` on SIGUSR1, resets them on SIGUSR2."""
    sys.path.insert(0, str(HERE))
    profiled = os.environ.get("DURABLE_PROFILE_CPROFILE") == "1"
    if profiled:  # before DBOS starts its threads: each gets a profile of its own
        start_profiles, snapshot = _profiling()
        start_profiles()
    from dbos._sys_db import SystemDatabase
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from agentensemble.durable import _dbos

    timed: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    statements: collections.Counter[str] = collections.Counter()

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timer(*args: Any, **kwargs: Any) -> Any:
            began = time.thread_time_ns()
            try:
                return original(*args, **kwargs)
            finally:
                entry = timed[label]
                entry[0] += 1
                entry[1] += time.thread_time_ns() - began

        setattr(owner, name, timer)

    for name in CALLS:
        if hasattr(SystemDatabase, name):
            wrap(SystemDatabase, name, f"DBOS {name}")
    wrap(_dbos, "read_run_start", "ours: the run's start read")

    @event.listens_for(Engine, "before_cursor_execute")
    def count(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        statements[" ".join(statement.split()[:4])[:60]] += 1

    def threads() -> collections.Counter[str]:
        found: collections.Counter[str] = collections.Counter()
        for thread in threading.enumerate():
            if thread.ident is None:
                continue
            try:
                clock = time.pthread_getcpuclockid(thread.ident)
                found[re.sub(r"_?\d+$", "", thread.name)] += time.clock_gettime_ns(clock)
            except (OSError, OverflowError):
                continue
        return found

    start: dict[str, Any] = {}

    def reset(*_: object) -> None:
        timed.clear()
        statements.clear()
        start.update(threads=threads(), cpu=time.process_time_ns())

    def dump(*_: object) -> None:
        now = threads()
        figures = {
            "process": time.process_time_ns() - start["cpu"],
            "threads": {k: v - start["threads"].get(k, 0) for k, v in now.items()},
            "calls": dict(timed),
            "statements": dict(statements),
        }
        if profiled:
            figures["profile"] = snapshot()
        Path(out).write_text(json.dumps(figures))
        os._exit(0)

    signal.signal(signal.SIGUSR2, reset)
    signal.signal(signal.SIGUSR1, dump)
    from agentensemble.cli import main as cli

    cli(["durable", "worker", "_durable_app", "--worker-id", "w1"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16, help="worker_concurrency")
    parser.add_argument("--database", help="database URL (default: a fresh SQLite file)")
    parser.add_argument(
        "--cprofile",
        action="store_true",
        help="also cProfile every worker thread (slower: read the shares, not the times) and "
        "split its CPU by whose code runs: ours, DBOS, SQLAlchemy, the driver, Python's",
    )
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker_out:
        _worker(args.worker_out)
        return
    from agentensemble.durable import DurableClient

    with tempfile.TemporaryDirectory() as work:
        url = args.database or f"sqlite:///{work}/runs.sqlite"
        out, log = Path(work) / "figures.json", Path(work) / "worker.log"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(HERE.parent), os.environ.get("PYTHONPATH", "")) if p
            ),
            "AGENTENSEMBLE_DATABASE_URL": url,
            "DURABLE_BENCH_CONCURRENCY": str(args.concurrency),
            "DURABLE_PROFILE_CPROFILE": "1" if args.cprofile else "",
        }
        command = [sys.executable, __file__, "--worker-out", str(out)]
        with open(log, "wb") as sink:
            worker = subprocess.Popen(command, cwd=HERE, env=env, stdout=sink, stderr=sink)
        try:
            while "worker 'w1'" not in log.read_text(errors="replace"):
                if worker.poll() is not None:
                    raise RuntimeError(log.read_text())
                time.sleep(0.05)
            client = DurableClient(url)
            try:
                worker.send_signal(signal.SIGUSR2)
                time.sleep(0.1)
                began = time.perf_counter()
                ids = [client.submit("stamp", {"item": str(n)}) for n in range(args.runs)]
                for run_id in ids:
                    client.result(run_id, timeout=300)
                took = time.perf_counter() - began
            finally:
                client.close()
            worker.send_signal(signal.SIGUSR1)
            worker.wait(timeout=60)
        finally:
            if worker.poll() is None:
                worker.kill()
        figures = json.loads(out.read_text())
    runs = args.runs
    load = os.getloadavg()[0]
    print(f"{runs} runs, {runs / took:.1f} runs/s, load {load:.1f}")
    print(f"worker CPU: {figures['process'] / 1e6 / runs:.2f} ms a run; by thread:")
    for name, ns in sorted(figures["threads"].items(), key=lambda kv: -kv[1]):
        if ns / 1e6 / runs >= 0.05:
            print(f"  {ns / 1e6 / runs:6.2f} ms  {name}")
    print("timed calls (CPU inside them, ms a run; calls a run):")
    for name, (calls, ns) in sorted(figures["calls"].items(), key=lambda kv: -kv[1][1]):
        print(f"  {ns / 1e6 / runs:6.2f} ms  {calls / runs:5.2f}x  {name}")
    total = sum(figures["statements"].values())
    print(f"statements: {total / runs:.1f} a run")
    for text, n in sorted(figures["statements"].items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {n / runs:5.2f}  {text}")
    if "profile" in figures:
        owners = figures["profile"]["owners"]
        whole = sum(owners.values()) or 1.0
        print("under cProfile (thread CPU, every thread; shares of the profiled CPU):")
        for owner, seconds in sorted(owners.items(), key=lambda kv: -kv[1]):
            print(f"  {100 * seconds / whole:5.1f} %  {seconds * 1e3 / runs:6.2f} ms  {owner}")
        print("functions with the most own time (ms a run, calls a run):")
        for name, seconds, calls, callers in [
            *figures["profile"]["top"],
            ["-- agentensemble/durable's own, most first:", 0.0, 0, []],
            *figures["profile"]["ours"],
        ]:
            print(f"  {seconds * 1e3 / runs:6.2f} ms  {calls / runs:7.2f}x  {name[:90]}")
            print(f"{'':28}from {'; '.join(c[:60] for c in callers)}")


if __name__ == "__main__":
    main()
