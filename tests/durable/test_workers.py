"""Many runs, many workers, one real Postgres: each queued run runs exactly once, spread over
the workers; a worker killed mid-run has its runs taken over at once with the ``recover``
command (test_takeover.py: without it, after ``dead_after``)."""

from __future__ import annotations

import collections
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _workers import HERE, Workers, handled

from agentensemble.durable import DurableClient


@pytest.fixture
def workers(postgres_url: str, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(postgres_url, tmp_path / "log.txt")
    try:
        yield pool
    finally:
        pool.stop_all()


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
                    "agentensemble",
                    "durable",
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
