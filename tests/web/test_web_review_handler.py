"""``WebReviewHandler`` against a console that misbehaves: it fails closed and never hammers."""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import respx
from _quiet_http import QuietHTTPServer

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


def _gzip_bomb(megabytes: int) -> bytes:
    """``megabytes`` MB of spaces, gzip-compressed to a few hundred bytes a MB."""
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * 1_000_000
    return b"".join([*(packer.compress(chunk) for _ in range(megabytes)), packer.flush()])


@contextmanager
def _console_answering(bombed: str) -> Iterator[str]:
    """A real server on 127.0.0.1 answering every request like a console, except requests to a
    path ending in ``bombed``: 100 kB of gzip inflating to 100 MB (a console URL pointing at the
    wrong server, or a compromised one)."""
    bomb = _gzip_bomb(100)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.split("?")[0]
            body, extra = (
                (bomb, {"Content-Encoding": "gzip"})
                if path.endswith(bombed)
                else (b'{"status": "pending"}', {})
            )
            self.send_response(201 if path == "/api/reviews" else 200)
            for name, value in {"Content-Type": "application/json", **extra}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

    server = QuietHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _peak_bytes(action: Callable[[], None]) -> int:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_answer_of_gigabytes_is_refused_as_it_streams_in_never_held() -> None:
    """Read whole and decoded, the answer to a long poll held 200 MB in the run's process."""
    with _console_answering(bombed="-1") as url:  # the review's own poll

        def review() -> None:
            request = _request(5).model_copy(update={"id": "review-1"})
            with pytest.raises(ReviewProtocolError, match="compressed"):
                WebReviewHandler(url, "token").review(request)

        assert _peak_bytes(review) < 40_000_000


def test_the_listener_never_reads_the_answer_to_its_events() -> None:
    from agentensemble.events import EnsembleStarted
    from agentensemble_web import WebConsole

    with _console_answering(bombed="/api/events") as url:

        def report() -> None:
            console = WebConsole(url, "token")
            console.on_event(EnsembleStarted(total_tasks=1))
            assert console.flush(10)
            console.close()
            assert console.delivered == 1

        assert _peak_bytes(report) < 40_000_000


def test_a_review_id_with_url_characters_is_decided_and_never_hammers_the_console() -> None:
    """A review id from a run id a caller chose (``run?x#y``) was put in the poll's URL as it
    was: the handler asked for another resource, got 404, posted again and asked again without
    pausing (1,300 requests in 1.7 s), and never saw the reviewer's decision."""
    from _web_support import api_client, wait_for_pending

    from agentensemble_review.models import Continue
    from agentensemble_web import WebConsoleServer

    request = _request(20).model_copy(update={"id": "run?x#y%2F:1"})
    with WebConsoleServer(port=0) as console:
        decided: list[object] = []
        handler = threading.Thread(
            target=lambda: decided.append(
                WebReviewHandler(console.url, console.token).review(request)
            ),
            daemon=True,
        )
        handler.start()
        with api_client(console) as api:
            [pending] = wait_for_pending(api)
            assert pending["id"] == "run?x#y%2F:1"
            api.post("/api/reviews/run%3Fx%23y%252F%3A1/decision", json={"decision": "continue"})
        handler.join(20)
    assert decided == [Continue(decided_by="api")]


def test_a_review_id_with_a_slash_is_refused_at_once() -> None:
    from agentensemble_web import WebConsoleServer

    with WebConsoleServer(port=0) as console:
        started = time.monotonic()
        decision = WebReviewHandler(console.url, console.token).review(
            _request(20).model_copy(update={"id": "runs/7:1"})
        )
    assert isinstance(decision, ExitEarly) and "could not be reached" in (decision.reason or "")
    assert time.monotonic() - started < 5  # at once, not after the 20 s timeout
