"""Calls of one model turn that make steps of their own run at once in a durable run, each in
a branch numbering its steps apart, and still resume after SIGKILL without repeating an
answered model request or a finished tool call: two delegations asked in one turn (each
worker's first request waits for the other's: a barrier), two approval-gated tool calls of one
turn (both reviews pending at once)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentensemble.durable import DurableClient, ReviewClosedError
from agentensemble.durable._review import REVIEWS_KEY, review_key

APP = Path(__file__).with_name("_concurrency_app.py")


def start(db: str, workdir: Path, mode: str, command: str, run_id: str, **env: str) -> Any:
    process = subprocess.Popen(
        [sys.executable, str(APP), db, str(workdir), mode, command, run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready", process.stderr
    return process


def finished(process: Any) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return dict(json.loads(out.strip().splitlines()[-1]))


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def wait_until(what: str, check: Any) -> Any:
    deadline = time.monotonic() + 60
    while True:
        try:
            found = check()
        except Exception:  # the run is not in the database yet
            found = None
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_delegations_of_one_turn_run_at_once_and_resume_without_repeats(
    any_database: str, tmp_path: Path
) -> None:
    first = start(any_database, tmp_path, "delegate", "start", "team-1", KILL_AT_SECOND="1")
    first.communicate(timeout=120)
    # killed in the Researcher's second request, after both first requests met at the barrier
    # (one after another, the first would have waited for the second in vain) and the Writer's
    # answer was recorded
    assert first.returncode == -signal.SIGKILL
    assert Counter(lines(tmp_path / "calls.log")) == {"manager": 1, "researcher": 2, "writer": 1}

    resumed = finished(start(any_database, tmp_path, "delegate", "resume", "team-1"))

    assert resumed["raw"] == "Report: the moon pulls the tides | Tides rise twice a day."
    # the one request in flight at the kill came again, and the manager's last; nothing else
    calls = lines(tmp_path / "calls.log")
    assert calls[4:] == ["researcher", "manager"]
    assert Counter(calls) == {"manager": 2, "researcher": 3, "writer": 1}
    assert lines(tmp_path / "effects.log") == ["moon"]  # the Researcher's note ran once


def test_approvals_of_one_turn_wait_at_once_and_a_finished_call_is_not_repeated(
    any_database: str, tmp_path: Path
) -> None:
    first = start(any_database, tmp_path, "approve", "start", "post-1")
    client = DurableClient(any_database)
    try:
        # both approvals are pending at the same time: the calls run at once
        pending = wait_until(
            "two pending reviews", lambda: len(client.pending_reviews("post-1")) == 2
        )
        assert pending
        reviews = {r["request"]["output"]: r["review_id"] for r in client.pending_reviews("post-1")}
        assert len(set(reviews.values())) == 2
        first_call = next(k for k in reviews if "post A" in k)
        second_call = next(k for k in reviews if "post B" in k)

        client.decide(
            "post-1", reviews[first_call], "edit", revised_output='{"text": "post A edited"}'
        )
        # A's body has run and its result is checkpointed; B still waits for its reviewer
        wait_until(
            "the first call's checkpoint",
            lambda: any(
                s.kind == "tool" and "published post A edited" in s.output
                for s in client.steps("post-1")
            ),
        )
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert lines(tmp_path / "effects.log") == ["post_A_edited"]

        client.decide("post-1", reviews[second_call], "continue")
        resumed = finished(start(any_database, tmp_path, "approve", "resume", "post-1"))
        # the run's steps list each review beside its own request, whichever was asked first
        listed = [s for s in client.steps("post-1") if s.kind == "review"]
        assert sorted(s.name for s in listed) == sorted(reviews.values())
        for step in listed:
            asked = first_call if step.name == reviews[first_call] else second_call
            assert asked in step.detail
    finally:
        if first.poll() is None:
            first.kill()
        client.close()

    assert resumed["raw"] == "Done: published post A edited | published post B"
    assert sorted(lines(tmp_path / "effects.log")) == ["post_A_edited", "post_B"]  # once each
    assert lines(tmp_path / "calls.log") == ["poster", "poster"]  # the first turn never again
    assert [c[1] for c in resumed["tool_calls"]] == [
        '{"text": "post A edited"}',
        '{"text": "post B"}',
    ]


def test_an_approval_inside_a_pipeline_waits_across_a_kill_and_the_tool_runs_once_edited(
    any_database: str, tmp_path: Path
) -> None:
    first = start(any_database, tmp_path, "pipeline", "start", "pipe-1")
    client = DurableClient(any_database)
    try:
        # the pipeline's inner publish asks in the run itself: DurableReviewHandler decides it
        review = wait_until("the inner approval", lambda: client.pending_reviews("pipe-1"))[0]
        assert review["request"]["tool_name"] == "publish"
        assert review["request"]["output"] == '{"text": "draft on tides"}'
        first.send_signal(signal.SIGKILL)  # the process waiting for the human dies
        first.wait(timeout=30)
        assert lines(tmp_path / "effects.log") == ["draft"]

        client.decide(
            "pipe-1", review["review_id"], "edit", revised_output='{"text": "final on tides"}'
        )
        resumed = finished(start(any_database, tmp_path, "pipeline", "resume", "pipe-1"))
    finally:
        if first.poll() is None:
            first.kill()
        client.close()

    assert resumed["raw"] == "Done: published final on tides"
    # the pipeline's first step ran before the kill and not again; publish once, as edited
    assert lines(tmp_path / "effects.log") == ["draft", "final_on_tides"]
    assert lines(tmp_path / "calls.log") == ["pipeliner", "pipeliner"]


def test_an_approval_inside_an_ensemble_nested_in_a_tool_is_decided_across_a_kill(
    any_database: str, tmp_path: Path
) -> None:
    first = start(any_database, tmp_path, "nested", "start", "nest-1")
    client = DurableClient(any_database)
    try:
        # asked inside the tool's step: published like any review of the run
        review = wait_until("the nested approval", lambda: client.pending_reviews("nest-1"))[0]
        assert review["request"]["tool_name"] == "publish"
        assert review["request"]["output"] == '{"text": "team post"}'
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert lines(tmp_path / "effects.log") == []

        outcome = client.decide(
            "nest-1", review["review_id"], "edit", revised_output='{"text": "edited post"}'
        )
        assert outcome == "queued"
        resumed = finished(start(any_database, tmp_path, "nested", "resume", "nest-1"))
        assert client.pending_reviews("nest-1") == []
    finally:
        if first.poll() is None:
            first.kill()
        client.close()

    assert resumed["raw"] == "Outer: Team: published edited post"
    assert lines(tmp_path / "effects.log") == ["edited_post"]  # once, as the reviewer edited it
    # the tool's step had not ended at the kill: the nested ensemble's request before the
    # review ran again (the step re-ran and found the decision under the same review id);
    # the outer turn before the tool was not asked again
    assert lines(tmp_path / "calls.log") == ["outer", "inner", "inner", "inner", "outer"]


def published_review(client: DurableClient, run_id: str) -> dict[str, Any]:
    """The run's first review as published, whatever its state: on a loaded machine a review
    with a short timeout may be past its deadline when first seen."""

    def read() -> Any:
        listed = client._client.get_event(run_id, REVIEWS_KEY, timeout_seconds=0) or []
        return client._client.get_event(run_id, review_key(listed[0]), timeout_seconds=0)

    return dict(wait_until("the published review", read))


def test_an_approval_inside_a_step_keeps_its_deadline_across_a_kill(tmp_path: Path) -> None:
    """A step run again after a crash waits what is left of its review's deadline, fixed when
    the review was first published, not a whole new timeout; a decision after it is refused."""
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    # the process kills itself as the step starts waiting: the review is published with its
    # deadline, the tool's step has not ended, and nobody holds the run
    first = start(
        db, tmp_path, "nested", "start", "nest-late", APPROVAL_TIMEOUT="2", DIE_AT_STEP_WAIT="1"
    )
    client = DurableClient(db)
    try:
        first.communicate(timeout=120)
        review = published_review(client, "nest-late")
        assert review["state"] == "pending"
        assert isinstance(review["deadline"], float)
        while time.time() <= review["deadline"]:  # wait for the deadline itself, no guess
            time.sleep(0.1)
        with pytest.raises(ReviewClosedError):
            client.decide("nest-late", review["review_id"], "continue")
        # the resuming process asks with a 600 s timeout: the re-run step waits until the
        # deadline fixed before the kill, already past, so the approval times out at once
        resumed = finished(
            start(db, tmp_path, "nested", "resume", "nest-late", APPROVAL_TIMEOUT="600")
        )
    finally:
        client.close()

    assert lines(tmp_path / "effects.log") == []  # never approved: publish never ran
    assert resumed["raw"].startswith("Outer: ")
