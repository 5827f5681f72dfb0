"""Review rules at the edges: the handler's own timeout racing a decision, and task reviews."""

from __future__ import annotations

import threading
from contextlib import closing
from datetime import timedelta

import pytest
from _web_support import api_client, logged_in, wait_for_pending

from agentensemble import Agent, Ensemble, Task
from agentensemble.testing import ScriptedChatModel
from agentensemble_review import Review
from agentensemble_web import WebConsoleServer, WebReviewHandler

REVIEW = {
    "run_id": "run-1",
    "request": {"id": "r-1", "timing": "after_execution", "output": "draft", "timeout_seconds": 60},
}


def test_a_decision_that_lands_before_the_handler_gives_up_stands(
    console: WebConsoleServer,
) -> None:
    with api_client(console) as api:
        api.post("/api/reviews", json=REVIEW)
        assert (
            api.post("/api/reviews/r-1/decision", json={"decision": "continue"}).status_code == 200
        )
        expired = api.post("/api/reviews/r-1/expire", json={}).json()
        assert expired["status"] == "decided"  # the handler applies the decision, not on_timeout


def test_once_the_handler_gave_up_no_decision_lands(console: WebConsoleServer) -> None:
    with api_client(console) as api:
        api.post("/api/reviews", json=REVIEW)
        assert api.post("/api/reviews/r-1/expire", json={}).json()["status"] == "expired"
        late = api.post("/api/reviews/r-1/decision", json={"decision": "continue"})
        assert late.status_code == 410
        assert api.get("/api/reviews/r-1").json()["decision"] is None


def test_a_task_review_edited_in_the_console_replaces_the_output(
    console: WebConsoleServer,
) -> None:
    writer = Agent(role="Writer", goal="Write", llm=ScriptedChatModel(["Tides: once a day."]))
    task = Task(
        description="One line about tides",
        expected_output="a line",
        agent=writer,
        review=Review.required("Is this right?", timeout=timedelta(seconds=60)),
    )
    ensemble = Ensemble(tasks=[task], review_handler=WebReviewHandler(console.url, console.token))
    box: dict[str, object] = {}
    thread = threading.Thread(target=lambda: box.setdefault("out", ensemble.run()), daemon=True)
    thread.start()
    browser, csrf = logged_in(console)
    with closing(browser):
        (review,) = wait_for_pending(browser)
        assert review["request"]["output"] == "Tides: once a day."
        assert review["request"]["prompt"] == "Is this right?"
        answer = browser.post(
            f"/api/reviews/{review['id']}/decision",
            json={"decision": "edit", "revised_output": "Tides: twice a day (not JSON: fine)."},
            headers={"X-CSRF-Token": csrf},
        )
        assert answer.status_code == 200, answer.text
    thread.join(timeout=30)
    assert box["out"].raw == "Tides: twice a day (not JSON: fine)."  # type: ignore[attr-defined]


def test_a_decision_with_a_lone_surrogate_still_reaches_the_run(console: WebConsoleServer) -> None:
    """Whatever the reviewer types (a browser sends a lone surrogate as a JSON escape), the
    decision is answered, shown and handed to the waiting handler: never a 500 that leaves the
    run waiting until on_timeout applies."""
    from test_web_security import _review

    with api_client(console) as api:
        api.post("/api/reviews", json=_review("r-s"))
        browser, csrf = logged_in(console)
        with closing(browser):
            answer = browser.post(
                "/api/reviews/r-s/decision",
                content=b'{"decision": "exit_early", "reason": "half \\ud800 pair"}',
                headers={"X-CSRF-Token": csrf, "Content-Type": "application/json"},
            )
            assert answer.status_code == 200, answer.text
            assert browser.get("/api/reviews").status_code == 200
            assert browser.get("/api/audit").status_code == 200
        seen = api.get("/api/reviews/r-s")
        assert seen.status_code == 200
        assert seen.json()["decision"]["reason"] == "half \ud800 pair"


def test_a_review_nobody_waits_for_any_more_is_marked_abandoned(
    console: WebConsoleServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose process died (or a review restored after a restart whose run is gone) must
    not sit among the pending ones forever: with no handler waiting, it is abandoned."""
    import time

    from test_web_security import _review

    from agentensemble_web import _reviews

    monkeypatch.setattr(_reviews, "ABANDONED_SECONDS", 0.2)
    with api_client(console) as api:
        api.post("/api/reviews", json=_review("r-ghost", timeout=0))  # no time limit
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            [review] = api.get("/api/reviews").json()["reviews"]
            if review["status"] != "pending":
                break
            time.sleep(0.05)
        assert (review["status"], review["abandoned"]) == ("expired", True)
        answer = api.post("/api/reviews/r-ghost/decision", json={"decision": "continue"})
        assert answer.status_code == 410  # nothing to approve any more
