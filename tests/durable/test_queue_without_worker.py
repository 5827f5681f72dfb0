"""A run queued while no worker serves the queue says so: the wait names the queue and how to
start a worker, found from the workers' leases in the database, never guessed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentensemble.durable import DurableClient
from agentensemble.durable._leases import Leases
from agentensemble.durable._runtime import QUEUE_NAME


def test_a_run_queued_with_no_worker_says_no_worker_serves_the_queue(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    client = DurableClient(db)
    try:
        run_id = client.submit("research", {"topic": "tides"}, run_id="queued-1")
        assert client.live_workers() == []
        with pytest.raises(TimeoutError) as waited:
            client.result(run_id, timeout=0.3)
        said = str(waited.value)
        assert f"run 'queued-1' did not finish within 0.3 s: it is queued on {QUEUE_NAME!r}" in said
        assert "no worker is serving the queue" in said
        assert "agentensemble durable worker MODULE" in said
        assert client.unserved_queue() is not None

        # a worker's live lease (as a launched DurableRuntime keeps): the wait says it is served
        leases = Leases(db, "agentensemble")
        try:
            leases.acquire("w1", dead_after=30)
            assert client.live_workers() == ["w1"]
            assert client.unserved_queue() is None
            with pytest.raises(TimeoutError, match=r"which 1 live worker\(s\) serve \(w1\)"):
                client.result(run_id, timeout=0.2)
        finally:
            leases.close()
    finally:
        client.close()


def test_a_fork_from_the_command_line_notes_that_no_worker_serves_the_queue(
    tmp_path: Path,
) -> None:
    """The fork is still made and queued (stdout as before); stderr says nobody will run it yet."""
    from test_time_travel import App

    db = f"sqlite:///{tmp_path}/runs.sqlite"
    App(db, tmp_path)("run", "r1", "tides")  # its worker has stopped: its lease is gone or stale
    forked = subprocess.run(
        [sys.executable, "-m", "agentensemble", "durable", "fork", "r1", "--from-task", "2",
         "--new-run-id", "r1-b", "--database", db],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout.strip() == "forked r1 from task 2 as r1-b (queued for a worker)"
    assert "no worker is serving the queue" in forked.stderr
    assert "agentensemble durable worker MODULE" in forked.stderr
