"""A run waiting for a human outlives its process: the decision comes later, from another
process, and the run goes on in whichever process resumes it. A decision for a review that is
no longer pending is refused and applied nowhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentensemble.durable import DurableClient, ReviewClosedError

APP = Path(__file__).with_name("_review_app.py")


def start(db: str, command: str, run_id: str, **env: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, str(APP), db, command, run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"  # launched: the database exists
    return process


def finished(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return dict(json.loads(out.strip().splitlines()[-1]))


def wait_for_review(client: DurableClient, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        try:
            pending = client.pending_reviews(run_id)
        except Exception:  # the run is not in the database yet
            pending = []
        if pending:
            return pending[0]
        assert time.monotonic() < deadline, "no review was published"
        time.sleep(0.1)


def test_a_review_decided_while_no_process_runs_is_applied_when_the_run_resumes(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    first = start(db, "start", "announce-1")
    client = DurableClient(db)
    try:
        review = wait_for_review(client, "announce-1")
        assert review["request"]["output"] == "Draft: we ship on Monday"
        first.kill()  # the process waiting for the human dies
        first.wait(timeout=30)

        client.decide(
            "announce-1", review["review_id"], "edit", revised_output="Draft: we ship Tuesday"
        )
        resumed = finished(start(db, "resume", "announce-1"))
        with pytest.raises(ReviewClosedError, match="no longer pending"):
            client.decide("announce-1", review["review_id"], "continue")  # applied once
    finally:
        client.close()

    assert resumed == {
        "raw": "Published: Draft: we ship Tuesday",
        "exit": "completed",
        "tasks": ["Draft: we ship Tuesday", "Published: Draft: we ship Tuesday"],
    }


def test_a_decision_for_a_timed_out_review_is_refused(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    run = start(db, "start", "announce-2", REVIEW_TIMEOUT="1")
    client = DurableClient(db)
    try:
        review = wait_for_review(client, "announce-2")
        output = finished(run)
        assert output["exit"] == "timeout"  # on_timeout=EXIT_EARLY, nobody answered
        with pytest.raises(ReviewClosedError, match="timed_out"):
            client.decide("announce-2", review["review_id"], "continue")
        with pytest.raises(ReviewClosedError, match="has no review"):
            client.decide("announce-2", "announce-2:999", "continue")
    finally:
        client.close()


def test_reviews_are_listed_and_decided_from_the_command_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    run = start(db, "start", "announce-3")

    def command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentensemble.durable", *args, "--database", db],
            capture_output=True,
            text=True,
            timeout=60,
        )

    client = DurableClient(db)
    try:
        review = wait_for_review(client, "announce-3")
    finally:
        client.close()
    listed = command("reviews", "announce-3")
    assert listed.returncode == 0, listed.stderr
    assert f"{review['review_id']}\tafter_execution\tDraft: we ship on Monday" in listed.stdout

    decided = command("decide", "announce-3", review["review_id"], "exit_early", "--text", "no")
    assert decided.returncode == 0, decided.stderr
    assert finished(run)["exit"] == "user_exit_early"
    again = command("decide", "announce-3", review["review_id"], "continue")
    assert again.returncode == 2
    assert "no longer pending" in again.stderr


def test_a_message_that_is_no_decision_never_approves(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    run = start(db, "start", "announce-4")
    client = DurableClient(db)
    try:
        review = wait_for_review(client, "announce-4")
        # a newer client's verb, or garbage, sent straight to the review's topic
        client._client.send("announce-4", {"decision": "approve!"}, topic=review["review_id"])
        out, err = run.communicate(timeout=120)
        listed = subprocess.run(
            [sys.executable, "-m", "agentensemble.durable", "runs", "--database", db],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        client.close()
    assert run.returncode != 0  # the run failed closed: nothing was published
    assert "not a decision" in err
    assert "Published" not in out
    assert listed.returncode == 0, listed.stderr
    assert "announce-4\tannounce\tERROR\t" in listed.stdout  # a failed run is listed as one
