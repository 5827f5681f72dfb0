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
from agentensemble.durable._review import REVIEWS_KEY, review_key

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
    """The run's first review once it is published, whatever its state by then: on a loaded
    machine a review with a short timeout may already have timed out when it is first seen."""
    deadline = time.monotonic() + 60
    while True:
        try:
            listed = client._client.get_event(run_id, REVIEWS_KEY, timeout_seconds=0) or []
            found = client._client.get_event(run_id, review_key(listed[0]), timeout_seconds=0)
        except Exception:  # the run, or its review, is not in the database yet
            found = None
        if isinstance(found, dict):
            return found
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
        with pytest.raises(ReviewClosedError, match=r"timed.out"):
            client.decide("announce-2", review["review_id"], "continue")
        with pytest.raises(ReviewClosedError, match="has no review"):
            client.decide("announce-2", "announce-2:999", "continue")
    finally:
        client.close()


def test_a_decision_after_the_deadline_while_no_worker_runs_is_refused_and_times_out(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    # the process dies as the run starts waiting (the review published, the wait not recorded):
    # nobody holds the run when the deadline passes, however slow the machine
    first = start(db, "start", "announce-late", REVIEW_TIMEOUT="2", REVIEW_APP_DIE_AT_WAIT="1")
    client = DurableClient(db)
    try:
        first.wait(timeout=120)
        review = wait_for_review(client, "announce-late")
        assert review["state"] == "pending"
        while time.time() <= review["deadline"]:  # wait for the deadline itself, no guess
            time.sleep(0.1)

        with pytest.raises(ReviewClosedError, match=r"timed.out"):
            client.decide("announce-late", review["review_id"], "continue")
        # the resuming process has another timeout (600 s): the run waits until the deadline
        # fixed when the review was asked, already past, not a new timeout from its recovery
        resumed = finished(start(db, "resume", "announce-late"))
    finally:
        client.close()

    assert resumed["exit"] == "timeout"  # on_timeout=EXIT_EARLY applies, not an approval


def test_a_late_decision_that_reaches_the_database_anyway_is_not_applied(tmp_path: Path) -> None:
    """A decision stamped after the deadline (sent by a client whose check it slipped past)
    times the review out when the run resumes."""
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    first = start(db, "start", "announce-stamp", REVIEW_TIMEOUT="2")
    client = DurableClient(db)
    try:
        review = wait_for_review(client, "announce-stamp")
        first.kill()
        first.wait(timeout=30)
        late = {"decision": "continue", "decision_id": "x", "sent_at": review["deadline"] + 1}
        client._client.send("announce-stamp", late, topic=review["review_id"])
        resumed = finished(start(db, "resume", "announce-stamp"))
    finally:
        client.close()

    assert resumed["exit"] == "timeout"


def test_reviews_are_listed_and_decided_from_the_command_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    run = start(db, "start", "announce-3")

    def command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentensemble", "durable", *args, "--database", db],
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
    assert (
        f"{review['review_id']}\tafter_execution\ttask: Draft the announcement"
        "\toutput: Draft: we ship on Monday"
    ) in listed.stdout

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
            [sys.executable, "-m", "agentensemble", "durable", "runs", "--database", db],
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


def test_two_reviewers_deciding_at_once_one_wins_and_the_other_is_told(tmp_path: Path) -> None:
    import threading

    db = f"sqlite:///{tmp_path}/runs.sqlite"
    run = start(db, "start", "announce-5")
    client = DurableClient(db)
    outcomes: dict[str, str] = {}
    try:
        review = wait_for_review(client, "announce-5")
        both = threading.Barrier(2)

        def reviewer(name: str, decision: str, text: str | None) -> None:
            mine = DurableClient(db)
            try:
                both.wait(timeout=30)
                mine.decide(
                    "announce-5",
                    review["review_id"],
                    decision,
                    revised_output=text,
                    confirm_within=30,
                )
                outcomes[name] = "applied"
            except ReviewClosedError as refused:
                outcomes[name] = f"refused: {refused}"
            finally:
                mine.close()

        threads = [
            threading.Thread(target=reviewer, args=("a", "edit", "Draft: A wins")),
            threading.Thread(target=reviewer, args=("b", "edit", "Draft: B wins")),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        output = finished(run)
    finally:
        client.close()

    winners = [name for name, outcome in outcomes.items() if outcome == "applied"]
    assert len(winners) == 1, outcomes
    loser = "b" if winners == ["a"] else "a"
    assert "not applied" in outcomes[loser]
    assert output["tasks"][0] == f"Draft: {winners[0].upper()} wins"


APPROVAL_APP = Path(__file__).with_name("_approval_app.py")


def start_approval(db: str, workdir: Path, command: str, run_id: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, str(APPROVAL_APP), db, str(workdir), command, run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def test_a_tool_approval_waits_across_a_restart_and_the_tool_runs_once(tmp_path: Path) -> None:
    """The approval is asked in the run itself, the tool's body is a step after it: the process
    waiting for the human dies, the decision (an edit) is sent while nothing runs, and the
    resumed run runs the tool once with the edited arguments, asking the model nothing again."""
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    first = start_approval(db, tmp_path, "start", "approve-1")
    client = DurableClient(db)
    try:
        review = wait_for_review(client, "approve-1")
        assert review["request"]["timing"] == "during_execution"
        assert review["request"]["tool_name"] == "publish"
        assert json.loads(review["request"]["output"]) == {"text": "We ship on Monday"}
        first.kill()
        first.wait(timeout=30)
        assert not (tmp_path / "published.log").exists()  # nothing ran without the human

        edited = json.dumps({"text": "We ship on Tuesday"})
        client.decide("approve-1", review["review_id"], "edit", revised_output=edited)
        resumed = finished(start_approval(db, tmp_path, "resume", "approve-1"))
        [called] = [step for step in client.steps("approve-1") if step.kind == "tool"]
    finally:
        client.close()

    # the run's history shows what the tool ran with, and what the model had asked, labelled
    assert called.name == "publish"
    assert called.detail.startswith(f"ran with: {edited} (a reviewer's edit; the model asked: ")
    assert called.asked is not None and json.loads(called.asked) == {"text": "We ship on Monday"}
    assert resumed["raw"] == "Done: published 'We ship on Tuesday'"
    assert json.loads(resumed["ran_with"]) == {"text": "We ship on Tuesday"}
    assert (tmp_path / "published.log").read_text().splitlines() == ["We ship on Tuesday"]
    # the first model call was answered before the kill and is not asked again
    assert (tmp_path / "model.log").read_text().split() == ["call", "call"]


BAD_DECISIONS: list[tuple[str, dict[str, Any], str]] = [
    ("edit", {"revised_output": 123}, "revised_output must be text"),
    ("edit", {"revised_output": "x" * 1_000_001}, "revised_output is 1000001 characters"),
    ("exit_early", {"reason": {"not": "text"}}, "reason must be text"),
    ("exit_early", {"reason": "x" * 1_000_001}, "reason is 1000001 characters"),
    ("continue", {"decided_by": ["carol"]}, "decided_by must be text"),
    ("continue", {"decided_by": "x" * 201}, "decided_by is 201 characters"),
]


def test_a_decision_that_is_not_text_or_too_long_is_refused_before_it_is_sent(
    tmp_path: Path,
) -> None:
    """``decide`` refuses what the run would not take (it fails closed on a message that is no
    decision: a caller's typo failed the run) or should not keep (megabytes in the database
    every worker and operator reads), naming the field; nothing is sent, so the review stays
    open and a good decision still applies."""
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    run = start(db, "start", "announce-9")
    client = DurableClient(db)
    try:
        review = wait_for_review(client, "announce-9")
        for decision, fields, expected in BAD_DECISIONS:
            with pytest.raises(ValueError, match=expected):
                client.decide("announce-9", review["review_id"], decision, **fields)
        assert client.decide("announce-9", review["review_id"], "continue", confirm_within=60) == (
            "applied"
        )
        output = finished(run)
    finally:
        client.close()
    assert output["raw"] == "Published: Draft: we ship on Monday"
