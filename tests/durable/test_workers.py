"""Many runs, many workers, one real Postgres: each queued run runs exactly once, spread over
the workers; a worker killed mid-run has its runs taken over by another."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentensemble.durable import DurableClient

HERE = Path(__file__).parent


class Workers:
    """Worker subprocesses of tests/durable/_queue_app.py, stopped at the end."""

    def __init__(self, database_url: str, log: Path, **env: str) -> None:
        self.env = {
            **os.environ,
            "AGENTENSEMBLE_DATABASE_URL": database_url,
            "QUEUE_APP_LOG": str(log),
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        self.processes: dict[str, subprocess.Popen[str]] = {}

    def start(self, worker_id: str) -> None:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentensemble.durable",
                "worker",
                "_queue_app",
                "--worker-id",
                worker_id,
            ],
            cwd=HERE,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.processes[worker_id] = process
        assert process.stdout is not None
        line = process.stdout.readline()  # the worker says it is up once DBOS has launched
        assert f"worker {worker_id!r}" in line, process.stderr.read() if process.stderr else line

    def kill(self, worker_id: str) -> None:
        self.processes[worker_id].send_signal(signal.SIGKILL)
        self.processes[worker_id].wait(timeout=30)

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture
def workers(postgres_url: str, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(postgres_url, tmp_path / "log.txt")
    try:
        yield pool
    finally:
        pool.stop_all()


def handled(log: Path) -> list[tuple[str, str]]:
    return [tuple(line.split()) for line in log.read_text().splitlines()]  # type: ignore[misc]


def test_sixty_queued_runs_each_run_once_spread_over_three_workers(
    workers: Workers, postgres_url: str, tmp_path: Path
) -> None:
    for worker_id in ("w1", "w2", "w3"):
        workers.start(worker_id)
    client = DurableClient(postgres_url)
    try:
        run_ids = [client.submit("record", {"item": f"item{n}"}) for n in range(60)]
        outputs = [client.result(run_id, timeout=120) for run_id in run_ids]
    finally:
        client.close()

    assert [o.raw for o in outputs] == ["done"] * 60
    records = handled(tmp_path / "log.txt")
    assert sorted(item for item, _ in records) == sorted(f"item{n}" for n in range(60))
    by_worker = collections.Counter(worker for _, worker in records)
    assert set(by_worker) <= {"w1", "w2", "w3"}
    assert len(by_worker) >= 2, by_worker  # spread, not all on one worker


def test_a_killed_workers_runs_are_taken_over_by_another(postgres_url: str, tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    slow = Workers(postgres_url, log, QUEUE_APP_SLOW="60", QUEUE_APP_CONCURRENCY="1")
    client = DurableClient(postgres_url)
    try:
        slow.start("doomed")
        run_id = client.submit("record", {"item": "slow-one"})
        deadline = time.monotonic() + 60
        while client.status(run_id) != "PENDING":  # the doomed worker has dequeued it
            assert time.monotonic() < deadline, client.status(run_id)
            time.sleep(0.1)
        slow.kill("doomed")
        assert not log.exists()  # it died inside the slow tool call

        rescuer = Workers(postgres_url, log, QUEUE_APP_SLOW="0")
        try:
            rescuer.start("rescuer")
            took = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "agentensemble.durable",
                    "recover",
                    "_queue_app",
                    "doomed",
                    "--worker-id",
                    "recoverer",
                ],
                cwd=HERE,
                env={**rescuer.env, "AGENTENSEMBLE_WORKER_ID": "recoverer"},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert took.returncode == 0, took.stderr
            assert f"took over 1 run(s) of worker 'doomed': {run_id}" in took.stdout
            assert client.result(run_id, timeout=60).raw == "done"
        finally:
            rescuer.stop_all()
    finally:
        slow.stop_all()
        client.close()

    # ran exactly once, by a live process: queued runs go back to the queue for any worker
    [(item, worker)] = handled(log)
    assert item == "slow-one"
    assert worker in {"rescuer", "recoverer"}
