"""``WebReviewHandler`` against a console that misbehaves: it fails closed and never hammers."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import respx

from agentensemble_review import ExitEarly, ReviewRequest, ReviewTiming
from agentensemble_review.errors import ReviewProtocolError
from agentensemble_web import WebReviewHandler

CONSOLE = "http://console.test"


def _request(seconds: float) -> ReviewRequest:
    return ReviewRequest(
        timing=ReviewTiming.AFTER_EXECUTION, output="draft", timeout=timedelta(seconds=seconds)
    )


@respx.mock
def test_a_failing_console_is_polled_gently_then_on_timeout_applies() -> None:
    respx.post(f"{CONSOLE}/api/reviews").respond(201, json={"status": "pending"})
    polls = respx.get(url__regex=rf"{CONSOLE}/api/reviews/[^/]+$").respond(500, json={})
    respx.post(url__regex=r".*/expire$").respond(500, json={})
    decision = WebReviewHandler(CONSOLE, "token").review(_request(1.3))
    assert isinstance(decision, ExitEarly) and decision.timed_out  # never approval
    assert 1 <= polls.call_count <= 6  # about one poll per 0.5 s, not a busy loop


@respx.mock
def test_a_console_that_refuses_the_review_fails_closed_at_once() -> None:
    respx.post(f"{CONSOLE}/api/reviews").respond(401, json={"error": "log in first"})
    decision = WebReviewHandler(CONSOLE, "wrong").review(_request(60))
    assert isinstance(decision, ExitEarly) and decision.timed_out
    assert "could not be reached" in (decision.reason or "")


@respx.mock
def test_an_answer_that_is_not_json_is_a_protocol_error_not_a_decision() -> None:
    respx.post(f"{CONSOLE}/api/reviews").respond(201, json={"status": "pending"})
    respx.get(url__regex=rf"{CONSOLE}/api/reviews/[^/]+$").respond(200, text="<html>ok</html>")
    with pytest.raises(ReviewProtocolError, match="not JSON"):
        WebReviewHandler(CONSOLE, "token").review(_request(5))


def test_a_lone_surrogate_in_model_output_still_reaches_the_reviewer() -> None:
    import threading

    from _web_support import logged_in, wait_for_pending

    from agentensemble_review.models import Continue, ReviewRequest, ReviewTiming
    from agentensemble_web import WebConsoleServer, WebReviewHandler

    request = ReviewRequest(
        timing=ReviewTiming.DURING_EXECUTION,
        task_description="write \ud800 a note",
        output='{"text": "half a pair: \udc00"}',
        tool_name="note",
    )
    with WebConsoleServer(port=0) as console:
        box: dict[str, object] = {}
        handler = WebReviewHandler(console.url, console.token)
        asking = threading.Thread(target=lambda: box.setdefault("d", handler.review(request)))
        asking.start()
        browser, csrf = logged_in(console)
        try:
            [pending] = wait_for_pending(browser)
            assert "\\udc00" in pending["request"]["output"]  # shown, escaped
            answer = browser.post(
                f"/api/reviews/{pending['id']}/decision",
                json={"decision": "continue"},
                headers={"X-CSRF-Token": csrf},
            )
            assert answer.status_code == 200, answer.text
        finally:
            browser.close()
        asking.join(timeout=20)
    assert isinstance(box.get("d"), Continue)


def test_the_decision_names_the_reviewer_who_took_it(tmp_path: Path) -> None:
    """A named reviewer's decision carries the name (the ReviewDecided event and the trace
    record it, not the handler's class)."""
    import threading

    from _web_support import logged_in, wait_for_pending

    from agentensemble_review.models import Edit
    from agentensemble_web import WebConsoleServer
    from agentensemble_web.reviewers import add_reviewer

    db = tmp_path / "console.sqlite3"
    with WebConsoleServer(port=0, db=str(db)) as console:
        carol = add_reviewer(db, "carol")
        box: dict[str, object] = {}
        handler = WebReviewHandler(console.url, console.token)
        asking = threading.Thread(target=lambda: box.setdefault("d", handler.review(_request(30))))
        asking.start()
        browser, csrf = logged_in(console, carol)
        try:
            [pending] = wait_for_pending(browser)
            answer = browser.post(
                f"/api/reviews/{pending['id']}/decision",
                json={"decision": "edit", "revised_output": "fixed"},
                headers={"X-CSRF-Token": csrf},
            )
            assert answer.status_code == 200, answer.text
        finally:
            browser.close()
        asking.join(timeout=20)
    assert box.get("d") == Edit("fixed", decided_by="carol")
