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


def _worker(out: str) -> None:
    """The worker, timed; writes its figures to ``out`` on SIGUSR1, resets them on SIGUSR2."""
    sys.path.insert(0, str(HERE))
    from dbos._sys_db import SystemDatabase
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from agentensemble.durable import _fresh

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
    wrap(_fresh, "_read", "ours: the run's start read")

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
        Path(out).write_text(json.dumps(figures))
        os._exit(0)

    signal.signal(signal.SIGUSR2, reset)
    signal.signal(signal.SIGUSR1, dump)
    from agentensemble.cli.durable_command import main

    main(["worker", "_durable_app", "--worker-id", "w1"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16, help="worker_concurrency")
    parser.add_argument("--database", help="database URL (default: a fresh SQLite file)")
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


if __name__ == "__main__":
    main()
