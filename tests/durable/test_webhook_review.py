"""A durable run waiting for a webhook review survives a restart.

The run's worker is a real subprocess; the review goes to the reference review server started
here on 127.0.0.1. The worker is SIGKILLed while the review waits, the decision is posted to the
server as the review page does, and a new worker resumes the run: it asks the server about the
same review (one review, one id), applies the decision, sends no answered model request again
and runs no completed tool again. A review whose timeout passed while no worker ran is expired
by the server: the resumed run applies its on_timeout at once and a late decision is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentensemble.testing import OpenAICompatibleServer
from agentensemble.testing.openai_server import TextReply, ToolCallsReply
from agentensemble_review import ReviewServer

APP = Path(__file__).with_name("_webhook_app.py")


def model(body: dict[str, Any]) -> TextReply | ToolCallsReply:
    """The Writer, as a function of the conversation."""
    messages = body["messages"]
    results = [str(m["content"]) for m in messages if m["role"] == "tool"]
    if "Publish the announcement" in str(messages[1]["content"]):
        if not results:
            name = body["tools"][0]["function"]["name"]  # publish or publish_twice
            return ToolCallsReply(calls=((name, '{"text": "We ship on Monday"}'),))
        return TextReply(f"Done: {results[-1]}")
    if "Draft the FAQ" in str(messages[1]["content"]):
        return TextReply("FAQ: why Monday?")
    return TextReply("Draft: we ship on Monday")


@dataclass
class Setup:
    workdir: Path
    reviews: ReviewServer
    models: OpenAICompatibleServer
    database: str
    run_id: str = "announce-1"

    def worker(self, command: str, mode: str, **env: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [
                sys.executable,
                str(APP),
                self.database,
                self.models.base_url,
                self.reviews.reviews_url,
                str(self.workdir),
                self.run_id,
                command,
                mode,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        )
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        return process

    def decide(self, review_id: str, decision: dict[str, Any]) -> httpx.Response:
        """What the review page's buttons send."""
        return httpx.post(
            f"{self.reviews.url}/reviews/{review_id}/decision",
            json=decision,
            headers={"Authorization": f"Bearer {self.reviews.token}"},
            timeout=10,
        )

    def held(self) -> list[dict[str, Any]]:
        return [record.to_json() for record in self.reviews.store.all()]


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    with ReviewServer(port=0) as reviews, OpenAICompatibleServer() as models:
        models.set_responder(model)
        yield Setup(tmp_path, reviews, models, f"sqlite:///{tmp_path}/runs.sqlite")


def kill_while_waiting(process: subprocess.Popen[str], setup: Setup) -> dict[str, Any]:
    """Wait (bounded) for the worker's review to reach the server, then SIGKILL the worker."""
    request = setup.reviews.wait_for_pending(timeout=60)
    process.kill()
    process.wait(timeout=30)
    return request


def finished(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return dict(json.loads(out.strip().splitlines()[-1]))


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_a_task_review_decided_on_the_server_while_no_worker_runs_is_applied_on_resume(
    setup: Setup, database: str, request: pytest.FixtureRequest
) -> None:
    if database == "postgres":  # a real server from the session (tests/durable/conftest.py)
        setup.database = request.getfixturevalue("postgres_url")
    request = kill_while_waiting(setup.worker("start", "task"), setup)
    assert request["output"] == "Draft: we ship on Monday"
    assert request["id"].startswith("announce-1:")  # the run's own id, not a random one
    assert setup.decide(
        request["id"], {"decision": "edit", "revised_output": "Draft: we ship Tuesday"}
    ).is_success

    output = finished(setup.worker("resume", "task"))

    assert output["tasks"] == ["Draft: we ship Tuesday", "Published: Draft: we ship Tuesday"]
    assert output["exit"] == "completed"
    held = setup.held()
    assert [(r["id"], r["status"]) for r in held] == [(request["id"], "decided")]
    assert len(setup.models.requests) == 1  # the answered draft request was not sent again


def test_a_tool_approval_decided_while_no_worker_runs_runs_the_tool_once(setup: Setup) -> None:
    request = kill_while_waiting(setup.worker("start", "tool"), setup)
    assert request["tool_name"] == "publish"
    assert request["id"].startswith("announce-1:")
    assert json.loads(request["output"]) == {"text": "We ship on Monday"}
    assert not (setup.workdir / "published.log").exists()  # waiting: the tool has not run
    edited = json.dumps({"text": "We ship on Tuesday"})
    assert setup.decide(request["id"], {"decision": "edit", "revised_output": edited}).is_success

    output = finished(setup.worker("resume", "tool"))

    assert output["raw"] == "Done: published We ship on Tuesday"
    assert (setup.workdir / "published.log").read_text().splitlines() == ["We ship on Tuesday"]
    assert [(r["id"], r["status"]) for r in setup.held()] == [(request["id"], "decided")]
    # the tool-call turn was answered once before the kill, the final turn once after it
    assert len(setup.models.requests) == 2


def wait_until_expired(setup: Setup, review_id: str) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        answer = httpx.get(f"{setup.reviews.url}/reviews/{review_id}", timeout=10)
        if answer.status_code != 202:
            return answer
        assert time.monotonic() < deadline, "the review never expired"
        time.sleep(0.1)


def test_a_review_that_timed_out_while_no_worker_ran_applies_on_timeout_on_resume(
    setup: Setup,
) -> None:
    request = kill_while_waiting(setup.worker("start", "task", REVIEW_TIMEOUT="4"), setup)
    gone = wait_until_expired(setup, request["id"])
    assert gone.status_code == 410
    assert gone.json()["status"] == "expired"

    late = setup.decide(request["id"], {"decision": "continue"})
    assert late.status_code == 410
    assert "expired" in late.json()["error"]

    output = finished(setup.worker("resume", "task", REVIEW_TIMEOUT="4"))

    assert output["exit"] == "timeout"  # on_timeout=EXIT_EARLY, never the late approval
    assert output["tasks"] == ["Draft: we ship on Monday"]  # nothing was published
    [decision] = output["decisions"]
    assert decision["timed_out"] is True
    # the server's expiry ended it, not a fresh full wait of the resumed worker
    assert "expired at the review webhook (HTTP 410 Gone)" in decision["reason"]
    assert [(r["id"], r["status"]) for r in setup.held()] == [(request["id"], "expired")]
    assert len(setup.models.requests) == 1


def test_two_reviews_asked_within_one_tool_step_keep_their_ids_across_a_restart(
    setup: Setup,
) -> None:
    """The tool's approval, then a question from its body: one durable step, two reviews."""
    worker = setup.worker("start", "two")
    approval = setup.reviews.wait_for_pending(timeout=60)
    assert setup.decide(approval["id"], {"decision": "continue"}).is_success
    question = kill_while_waiting(worker, setup)  # the body's question waits now
    assert question["output"] == "Really publish 'We ship on Monday' to every customer?"
    step = approval["id"].rsplit(".", 1)[0]
    assert (approval["id"], question["id"]) == (f"{step}.0", f"{step}.1")
    assert setup.decide(question["id"], {"decision": "continue"}).is_success

    output = finished(setup.worker("resume", "two"))

    assert output["raw"] == "Done: published We ship on Monday"
    assert (setup.workdir / "published.log").read_text().splitlines() == ["We ship on Monday"]
    held = [(r["id"], r["status"]) for r in setup.held()]
    assert held == [(approval["id"], "decided"), (question["id"], "decided")]
    assert len(setup.models.requests) == 2


def test_reviews_of_tasks_running_at_once_are_each_asked_again_under_their_own_id(
    setup: Setup,
) -> None:
    """A parallel run: both drafts wait for their review when the worker dies; each review is
    decided on its own, and the resumed run applies each decision to its own task."""
    worker = setup.worker("start", "parallel")
    deadline = time.monotonic() + 60
    while len(setup.reviews.pending()) < 2:  # bounded: both reviews reach the server
        assert time.monotonic() < deadline, setup.held()
        time.sleep(0.05)
    worker.kill()
    worker.wait(timeout=30)
    by_output = {r["output"]: r["id"] for r in setup.reviews.pending()}
    assert setup.decide(
        by_output["Draft: we ship on Monday"],
        {"decision": "edit", "revised_output": "Draft: we ship Tuesday"},
    ).is_success
    assert setup.decide(by_output["FAQ: why Monday?"], {"decision": "continue"}).is_success

    output = finished(setup.worker("resume", "parallel"))

    assert sorted(output["tasks"]) == ["Draft: we ship Tuesday", "FAQ: why Monday?"]
    assert sorted((r["id"], r["status"]) for r in setup.held()) == sorted(
        (review_id, "decided") for review_id in by_output.values()
    )
    assert len(setup.models.requests) == 2


def test_a_very_long_run_id_gives_reviews_a_short_stable_id(setup: Setup) -> None:
    """Webhooks bound an id's length (the reference server: 200 characters); a run id too long
    for the readable form gives a digest instead, the same on every replay."""
    setup.run_id = "announce-" + "x" * 190
    request = kill_while_waiting(setup.worker("start", "task"), setup)
    assert request["id"].startswith("run-")
    assert len(request["id"]) == len("run-") + 64
    assert setup.decide(request["id"], {"decision": "continue"}).is_success

    output = finished(setup.worker("resume", "task"))

    assert output["tasks"] == ["Draft: we ship on Monday", "Published: Draft: we ship on Monday"]
    assert [(r["id"], r["status"]) for r in setup.held()] == [(request["id"], "decided")]
