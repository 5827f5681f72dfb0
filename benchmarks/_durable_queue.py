"""The queue half of ``benchmarks/durable.py``: a Postgres from pgserver, worker processes of
``_durable_app`` started with the worker command, queue throughput and recovery of a killed
worker's runs. Every process started here is stopped, also on failure."""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
Row = tuple[str, str, str]
_names = itertools.count(1)


@contextlib.contextmanager
def postgres(work: Path) -> Iterator[str]:
    """A Postgres server from the pgserver package in ``work``; its admin URL (unix socket)."""
    import pgserver

    server = pgserver.get_server(work / "pg", cleanup_mode="stop")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()


def fresh_database(admin_url: str) -> str:
    """A new, empty database on the server at ``admin_url``; its URL."""
    import psycopg

    name = f"durable_bench_{os.getpid()}_{next(_names)}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name}")
        connection.execute(f"CREATE DATABASE {name}")
    return admin_url.replace("/postgres?", f"/{name}?", 1)


class Workers:
    """Worker processes of ``_durable_app`` (the worker command); all stopped on exit."""

    def __init__(self, database_url: str, logs: Path, **common: str) -> None:
        self.database_url, self.logs, self.common = database_url, logs, common
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.log_paths: list[Path] = []

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "agentensemble", "durable", *args]

    def env(self, **extra: str) -> dict[str, str]:
        # the code measured: this checkout's (or DURABLE_BENCH_SRC's, a baseline), never
        # whatever else the interpreter's path holds
        source = os.environ.get("DURABLE_BENCH_SRC") or str(HERE.parent)
        path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
        return {
            **os.environ,
            "PYTHONPATH": path,
            "AGENTENSEMBLE_DATABASE_URL": self.database_url,
            **self.common,
            **extra,
        }

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the live worker processes have used so far."""
        total = 0.0
        for process in self.processes.values():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def start(self, worker_id: str, timeout: float = 120, **extra: str) -> float:
        """Start worker ``worker_id``; seconds from spawn until it says it is up."""
        log = self.logs / f"worker-{worker_id}-{next(_names)}.log"
        self.log_paths.append(log)
        started = time.perf_counter()
        with open(log, "wb") as out:
            self.processes[worker_id] = subprocess.Popen(
                self.command("worker", "_durable_app", "--worker-id", worker_id),
                cwd=HERE,
                env=self.env(**extra),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = started + timeout
        while f"worker {worker_id!r}" not in log.read_text(errors="replace"):
            if self.processes[worker_id].poll() is not None or time.perf_counter() > deadline:
                raise RuntimeError(f"worker {worker_id} did not start: {log.read_text()[-2000:]}")
            time.sleep(0.02)
        return time.perf_counter() - started

    def kill(self, worker_id: str) -> None:
        self.processes[worker_id].send_signal(signal.SIGKILL)
        self.processes[worker_id].wait(timeout=30)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def _await_all(client: Any, run_ids: Sequence[str], timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    return [
        client.result(run_id, timeout=max(0.1, deadline - time.monotonic())).raw
        for run_id in run_ids
    ]


def fresh_sqlite(work: Path) -> str:
    """A new SQLite database file in ``work``; its URL."""
    return f"sqlite:///{work / f'queue-{os.getpid()}-{next(_names)}.sqlite'}"


def bench_throughput(
    admin_url: str,
    work: Path,
    runs: int,
    counts: Sequence[int],
    *,
    rounds: int = 3,
    concurrency: int = 16,
    baseline: str | None = None,
) -> list[Row]:
    """``runs`` queued runs with each number of workers in ``counts`` on Postgres and on SQLite
    (fresh databases each time), ``rounds`` times, interleaved: every variant (and the
    ``baseline`` source tree's, if given) measured once per round, so load drift hits all."""
    from agentensemble.durable import DurableClient

    versions = {"": None} if baseline is None else {"": None, " (baseline)": baseline}
    variants = [
        (backend, count, label)
        for backend in ("postgres", "sqlite")
        for count in counts
        for label in versions
    ]
    samples: dict[tuple[str, int, str], list[tuple[float, float, float, str]]] = (
        collections.defaultdict(list)
    )
    starts: list[float] = []
    common = {"DURABLE_BENCH_CONCURRENCY": str(concurrency)}
    for _ in range(rounds):
        for backend, count, label in variants:
            url = fresh_database(admin_url) if backend == "postgres" else fresh_sqlite(work)
            source = versions[label]
            saved = os.environ.get("DURABLE_BENCH_SRC")
            if source is not None:
                os.environ["DURABLE_BENCH_SRC"] = source
            try:
                with Workers(url, work, **common) as workers:
                    starts += [workers.start(f"w{n}") for n in range(1, count + 1)]
                    client = DurableClient(url)
                    try:
                        cpu = workers.cpu_seconds()
                        began = time.perf_counter()
                        run_ids = [client.submit("stamp", {"item": str(n)}) for n in range(runs)]
                        answers = _await_all(client, run_ids, timeout=300)
                        took = time.perf_counter() - began
                        cpu = workers.cpu_seconds() - cpu
                    finally:
                        client.close()
            finally:
                if source is not None:
                    if saved is None:
                        os.environ.pop("DURABLE_BENCH_SRC", None)
                    else:
                        os.environ["DURABLE_BENCH_SRC"] = saved
            spread = collections.Counter(answer.split()[-1] for answer in answers)
            backoffs = sum(
                p.read_text(errors="replace").count("Contention") for p in workers.log_paths
            )
            shown = "/".join(str(spread[w]) for w in sorted(spread))
            samples[backend, count, label].append(
                (runs / took, cpu / runs, os.getloadavg()[0], f"{shown}, back-offs {backoffs}")
            )
    rows: list[Row] = []
    for backend, count, label in variants:
        found = samples[backend, count, label]
        rates = [rate for rate, _, _, _ in found]
        one = samples[backend, 1, label]
        ratio = ""
        if count != 1 and one:
            paired = [r / o[0] for r, o in zip(rates, one, strict=True)]
            ratio = f"; {statistics.median(paired):.2f}x one worker (same rounds)"
        if label and baseline is not None:
            new = [rate for rate, _, _, _ in samples[backend, count, ""]]
            gain = statistics.median([n / b for n, b in zip(new, rates, strict=True)])
            ratio += f"; this branch {gain:.2f}x"
        rows.append((
            f"{runs} queued 2-task runs, {count} worker(s), {backend}{label}",
            f"{statistics.median(rates):.1f} runs/s",
            f"min-max {min(rates):.1f}-{max(rates):.1f} over {rounds} rounds; worker CPU "
            f"{statistics.median(c for _, c, _, _ in found) * 1e3:.1f} ms/run; load "
            f"{statistics.median(load for _, _, load, _ in found):.1f}; runs per worker, "
            f"last round: {found[-1][3]}{ratio}",
        ))  # fmt: skip
    rows.append((
        "worker start (spawn to ready: imports, DBOS launch)",
        f"{statistics.median(starts):.2f} s",
        f"min-max {min(starts):.2f}-{max(starts):.2f} s over {len(starts)} starts",
    ))  # fmt: skip
    return rows


def _doomed_holding(workers: Any, client: Any, held: int) -> list[str]:
    """Start worker "doomed", submit ``held`` slow runs and wait until it holds them all."""
    workers.start("doomed", DURABLE_BENCH_SLOW="600", DURABLE_BENCH_CONCURRENCY=str(held))
    run_ids = [client.submit("stamp", {"item": str(n)}) for n in range(held)]
    deadline = time.monotonic() + 120
    while any(client.status(run_id) != "PENDING" for run_id in run_ids):
        if time.monotonic() > deadline:
            raise RuntimeError("the doomed worker did not take its runs in 120 s")
        time.sleep(0.05)
    return run_ids


def bench_recovery(admin_url: str, work: Path, held: int, *, rescuer: bool = True) -> list[Row]:
    """SIGKILL a worker holding ``held`` runs; ``recover`` them; time until all finished.

    With ``rescuer`` another worker is up when the worker dies (the recovered runs go back to
    the queue for either it or the process running ``recover``), and the automatic takeover
    is measured too (``bench_takeover``)."""
    from agentensemble.durable import DurableClient

    url = fresh_database(admin_url)
    client = DurableClient(url)
    try:
        with Workers(url, work) as workers:
            run_ids = _doomed_holding(workers, client, held)
            if rescuer:
                workers.start("rescuer")
            killed = time.perf_counter()
            workers.kill("doomed")
            took = subprocess.run(
                workers.command("recover", "_durable_app", "doomed", "--worker-id", "recoverer"),
                cwd=HERE,
                env=workers.env(AGENTENSEMBLE_WORKER_ID="recoverer"),
                capture_output=True,
                text=True,
                timeout=180,
            )
            if took.returncode != 0 or f"took over {held} run(s)" not in took.stdout:
                raise RuntimeError(f"recover failed: {took.stdout}{took.stderr}")
            answers = _await_all(client, run_ids, timeout=180)
            finished = time.perf_counter() - killed
            began = time.perf_counter()  # the fixed cost of any such command: start, read
            listed = subprocess.run(
                workers.command("runs"),
                cwd=HERE,
                env=workers.env(AGENTENSEMBLE_WORKER_ID="lister"),
                capture_output=True,
                timeout=180,
            )
            floor = time.perf_counter() - began
            if listed.returncode != 0:
                raise RuntimeError(f"runs command failed: {listed.stderr!r}")
    finally:
        client.close()
    spread = collections.Counter(answer.split()[-1] for answer in answers)
    rows = [
        (
            f"recovery: SIGKILL a worker holding {held} runs, `recover`, all finished",
            f"{finished:.2f} s",
            f"finished by {dict(sorted(spread.items()))}",
        ),
        ("`runs` command (start, read the database, list)", f"{floor:.2f} s", "its start-up cost"),
    ]
    # with a live worker, no command is needed: it takes the dead worker's runs by itself
    return rows + (bench_takeover(admin_url, work, held) if rescuer else [])


def bench_takeover(
    admin_url: str,
    work: Path,
    held: int,
    *,
    rounds: int = 3,
    heartbeat_interval: float = 0.5,
    dead_after: float = 3.0,
) -> list[Row]:
    """SIGKILL a worker holding ``held`` runs while another is up, run no command: seconds
    until every run it held finished (the live worker finds the lease stale, takes them)."""
    from agentensemble.durable import DurableClient

    leases = {
        "AGENTENSEMBLE_HEARTBEAT_INTERVAL": str(heartbeat_interval),
        "AGENTENSEMBLE_DEAD_AFTER": str(dead_after),
    }
    took: list[float] = []
    for _ in range(rounds):
        url = fresh_database(admin_url)
        client = DurableClient(url)
        try:
            with Workers(url, work, **leases) as workers:
                run_ids = _doomed_holding(workers, client, held)
                workers.start("rescuer")
                killed = time.perf_counter()
                workers.kill("doomed")
                answers = _await_all(client, run_ids, timeout=180)
                took.append(time.perf_counter() - killed)
                if any(not answer.endswith("rescuer") for answer in answers):
                    raise RuntimeError(f"runs not finished by the rescuer: {answers}")
        finally:
            client.close()
    median = statistics.median(took)
    return [
        (
            f"automatic takeover: SIGKILL a worker holding {held} runs, no command, all finished",
            f"{median:.2f} s",
            f"dead_after {dead_after} s, heartbeat {heartbeat_interval} s: "
            f"{median - dead_after:.2f} s past dead_after (finding the stale lease, up to a "
            f"heartbeat; re-enqueue; queue poll; the runs); min-max {min(took):.2f}-"
            f"{max(took):.2f} s over {rounds} kills",
        ),
    ]
