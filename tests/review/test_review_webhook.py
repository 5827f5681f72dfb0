"""WebhookReviewHandler against real HTTP servers on 127.0.0.1: the reference ReviewServer and
small ad-hoc ones. Every timeout here is at most 1 s, and every wait is asserted to end in time."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from _review_support import SECRET, Seen, adhoc_server, closed_port, json_reply, silent_listener

from agentensemble_review import (
    Continue,
    Edit,
    ExitEarly,
    OnTimeoutAction,
    ReviewProtocolError,
    ReviewRequest,
    ReviewServer,
    ReviewTimeoutError,
    ReviewTiming,
    WebhookReviewHandler,
    aask,
    request_to_json,
    verify_signature,
)

# Scheduling slack on a busy shared machine; every wait bounded with it has a failure mode that
# takes far longer (a 30 s request timeout, a 60 s review, retries without end).
MARGIN = 3.0


def make_request(
    timeout: float = 1.0, on_timeout: OnTimeoutAction = OnTimeoutAction.EXIT_EARLY
) -> ReviewRequest:
    return ReviewRequest(
        timing=ReviewTiming.DURING_EXECUTION,
        task_description="Tidy the disk",
        output='{"path": "/tmp/old"}',
        prompt="Delete this?",
        tool_name="delete_file",
        timeout=timedelta(seconds=timeout),
        on_timeout=on_timeout,
    )


def decide_later(server: ReviewServer, decision: Any, delay: float = 0.3) -> threading.Thread:
    def run() -> None:
        request = server.wait_for_pending(timeout=5)
        time.sleep(delay)
        server.decide(request["id"], decision)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# -- the 200 path -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_200_answer_with_signed_body_and_custom_headers() -> None:
    with adhoc_server(
        lambda seen: json_reply(200, {"decision": "edit", "revised_output": "/tmp/x"})
    ) as (
        url,
        seen,
    ):
        handler = WebhookReviewHandler(
            f"{url}/hook", secret="s3cret", headers={"Authorization": "Bearer tok123456"}
        )
        request = make_request()
        assert await handler.areview(request) == Edit("/tmp/x")
    [post] = seen
    assert (post.method, post.path) == ("POST", "/hook")
    assert json.loads(post.body) == request_to_json(request)
    assert verify_signature(post.body, post.headers["X-AgentEnsemble-Signature"], "s3cret")
    assert not verify_signature(post.body, post.headers["X-AgentEnsemble-Signature"], "other")
    assert post.headers["Authorization"] == "Bearer tok123456"
    assert post.headers["Content-Type"] == "application/json"
    assert post.headers["X-AgentEnsemble-Review-Id"] == request.id


def test_no_secret_means_no_signature_header_and_sync_review_works() -> None:
    with adhoc_server(lambda seen: json_reply(200, {"decision": "continue"})) as (url, seen):
        assert WebhookReviewHandler(url).review(make_request()) == Continue()
    assert "X-AgentEnsemble-Signature" not in seen[0].headers


# -- the 202 + poll path, against the reference server ------------------------------------------


@pytest.mark.anyio
async def test_202_then_poll_until_decided(review_server: ReviewServer) -> None:
    decide_later(review_server, Edit("/tmp/safe"))
    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, poll_interval=0.05)
    # decided, not timed out: the 30 s review timeout is far off
    assert await handler.areview(make_request(timeout=30)) == Edit("/tmp/safe")
    assert len(review_server.store.all()) == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    "decision", [Continue(), Edit("a\nb"), ExitEarly("too risky"), ExitEarly()], ids=repr
)
async def test_every_decision_travels_through_the_server(
    review_server: ReviewServer, decision: Any
) -> None:
    decide_later(review_server, decision, delay=0.05)
    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, poll_interval=0.05)
    assert await aask(handler, make_request(timeout=5)) == decision


@pytest.mark.anyio
async def test_wrong_secret_is_rejected_by_the_server(review_server: ReviewServer) -> None:
    handler = WebhookReviewHandler(review_server.reviews_url, secret="not-the-secret")
    with pytest.raises(ReviewProtocolError, match="401") as info:
        await handler.areview(make_request())
    assert info.value.status_code == 401
    assert "secret the same on both sides" in str(info.value)
    assert "not-the-secret" not in str(info.value)
    assert review_server.pending() == []


@pytest.mark.anyio
async def test_missing_secret_is_rejected_by_the_server(review_server: ReviewServer) -> None:
    with pytest.raises(ReviewProtocolError, match="401"):
        await WebhookReviewHandler(review_server.reviews_url).areview(make_request())


@pytest.mark.anyio
async def test_relative_location_and_retry_after_are_honoured() -> None:
    polls = 0

    def respond(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        nonlocal polls
        if seen.method == "POST":
            return json_reply(202, {}, {"Location": "status/7", "Retry-After": "0.05"})
        polls += 1
        if polls < 3:
            return json_reply(202, {"status": "pending"}, {"Retry-After": "0.05"})
        return json_reply(200, {"decision": "exit_early", "reason": "no"})

    with adhoc_server(respond) as (url, seen):
        handler = WebhookReviewHandler(
            f"{url}/hooks/review", poll_interval=20.0, max_poll_interval=20.0
        )
        started = time.monotonic()
        assert await handler.areview(make_request(timeout=120)) == ExitEarly("no")
        assert time.monotonic() - started < 10  # Retry-After: 0.05 beat poll_interval=20
    assert [(s.method, s.path) for s in seen] == [("POST", "/hooks/review")] + [
        ("GET", "/hooks/status/7")
    ] * 3


# -- no decision in time: on_timeout, within the timeout ----------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (OnTimeoutAction.EXIT_EARLY, "exit"),
        (OnTimeoutAction.CONTINUE, Continue()),
        (OnTimeoutAction.FAIL, ReviewTimeoutError),
    ],
    ids=["exit_early", "continue", "fail"],
)
async def test_a_server_that_never_decides_ends_in_on_timeout(
    review_server: ReviewServer, action: OnTimeoutAction, expected: Any
) -> None:
    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, poll_interval=0.05)
    started = time.monotonic()
    if expected is ReviewTimeoutError:
        with pytest.raises(ReviewTimeoutError, match="no decision from the review webhook"):
            await handler.areview(make_request(0.8, action))
    else:
        decision = await handler.areview(make_request(0.8, action))
        if expected == "exit":
            assert decision == ExitEarly(
                "Review timed out after 0.8s: no decision from the review webhook", timed_out=True
            )
        else:
            assert decision == expected
    elapsed = time.monotonic() - started
    assert 0.7 < elapsed < 0.8 + MARGIN
    # it did reach the server, and the handler told the server it stopped waiting
    (record,) = review_server.store.all()
    assert record.decision is None and record.withdrawn is not None
    assert review_server.pending() == []


@pytest.mark.anyio
async def test_an_unreachable_server_ends_in_on_timeout_within_the_timeout() -> None:
    handler = WebhookReviewHandler(f"http://127.0.0.1:{closed_port()}/reviews", max_retries=20)
    started = time.monotonic()
    decision = await handler.areview(make_request(1.0))
    assert time.monotonic() - started < 1.0 + MARGIN
    assert isinstance(decision, ExitEarly) and decision.timed_out
    assert "ConnectError" in (decision.reason or "")


@pytest.mark.anyio
async def test_an_unreachable_server_gives_up_after_the_retries() -> None:
    handler = WebhookReviewHandler(f"http://127.0.0.1:{closed_port()}/reviews", max_retries=2)
    started = time.monotonic()
    decision = await handler.areview(make_request(60.0))
    assert time.monotonic() - started < 10  # backoff 0.25 + 0.5 (+ jitter), not 60 s
    assert isinstance(decision, ExitEarly) and decision.timed_out
    assert "failed 3 time(s), last with ConnectError" in (decision.reason or "")


@pytest.mark.anyio
async def test_a_server_that_accepts_but_never_answers_cannot_hold_us() -> None:
    with silent_listener() as url:
        handler = WebhookReviewHandler(url, request_timeout=30)
        started = time.monotonic()
        decision = await handler.areview(make_request(0.6))
        assert time.monotonic() - started < 0.6 + MARGIN
    assert isinstance(decision, ExitEarly) and decision.timed_out


@pytest.mark.anyio
async def test_the_handlers_own_timeout_wins_when_shorter() -> None:
    with silent_listener() as url:
        handler = WebhookReviewHandler(url, timeout=timedelta(seconds=0.4))
        started = time.monotonic()
        decision = await aask(handler, make_request(60))
        assert time.monotonic() - started < 0.4 + MARGIN
    assert decision == ExitEarly(
        "Review timed out after 0.4s: no decision from the review webhook", timed_out=True
    )


def test_sync_review_never_waits_past_its_timeout(review_server: ReviewServer) -> None:
    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, poll_interval=0.05)
    started = time.monotonic()
    decision = handler.review(make_request(0.5))
    assert time.monotonic() - started < 0.5 + MARGIN
    assert isinstance(decision, ExitEarly) and decision.timed_out


@pytest.mark.anyio
async def test_sync_review_works_even_inside_a_running_loop(review_server: ReviewServer) -> None:
    decide_later(review_server, Continue(), delay=0.05)
    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, poll_interval=0.05)
    assert handler.review(make_request(5)) == Continue()


# -- retries ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_5xx_then_200_is_retried_with_the_same_signed_body() -> None:
    answers = iter(
        [json_reply(503, {}), json_reply(500, {}), json_reply(200, {"decision": "continue"})]
    )
    with adhoc_server(lambda seen: next(answers)) as (url, seen):
        handler = WebhookReviewHandler(url, secret="s3cret", max_retries=3)
        assert await handler.areview(make_request(5)) == Continue()
    assert [s.method for s in seen] == ["POST"] * 3
    assert len({s.body for s in seen}) == 1
    assert len({s.headers["X-AgentEnsemble-Signature"] for s in seen}) == 1


@pytest.mark.anyio
async def test_5xx_on_a_poll_is_retried_too() -> None:
    answers = iter(
        [
            json_reply(202, {}, {"Location": "/r/1"}),
            json_reply(502, {}),
            json_reply(200, {"decision": "continue"}),
        ]
    )
    with adhoc_server(lambda seen: next(answers)) as (url, seen):
        handler = WebhookReviewHandler(url, poll_interval=0.05)
        assert await handler.areview(make_request(5)) == Continue()
    assert [s.method for s in seen] == ["POST", "GET", "GET"]


@pytest.mark.anyio
async def test_5xx_forever_applies_on_timeout_after_the_retries() -> None:
    with adhoc_server(lambda seen: json_reply(503, {"error": "down"})) as (url, seen):
        handler = WebhookReviewHandler(url, max_retries=2)
        decision = await handler.areview(make_request(5))
    assert len(seen) == 4  # three tries, then it tells the webhook it stopped waiting
    assert seen[-1].method == "POST" and seen[-1].path.endswith("/withdraw")
    assert isinstance(decision, ExitEarly) and decision.timed_out
    assert "failed 3 time(s), last with HTTP 503 Service Unavailable" in (decision.reason or "")


@pytest.mark.anyio
async def test_connection_errors_then_success_through_a_transport() -> None:
    calls = 0

    def respond(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json={"decision": "edit", "revised_output": "ok"})

    handler = WebhookReviewHandler(
        "http://review.test/hook", transport=httpx.MockTransport(respond), max_retries=3
    )
    assert await handler.areview(make_request(5)) == Edit("ok")
    assert calls == 3


# -- garbage is an error, never approval --------------------------------------------------------

GARBAGE = [
    pytest.param(
        (200, {"Content-Type": "text/html"}, b"<html>oops</html>"), "not valid JSON", id="html"
    ),
    pytest.param(
        json_reply(200, {"decision": "approve"}), "unknown decision 'approve'", id="unknown"
    ),
    pytest.param(json_reply(200, {"decision": "edit"}), "revised_output", id="edit-without-text"),
    pytest.param(json_reply(200, ["continue"]), "must be a JSON object", id="list"),
    pytest.param(json_reply(200, {"ok": True}), "no string 'decision' field", id="no-decision"),
    pytest.param(json_reply(202, {}), "without a Location header", id="202-no-location"),
    pytest.param(json_reply(404, {"error": "nope"}), "answered 404", id="404"),
    pytest.param(
        json_reply(202, {}, {"Location": "ftp://127.0.0.1/x"}), "not http\\(s\\)", id="ftp-location"
    ),
    pytest.param(json_reply(302, {}, {"Location": "/elsewhere"}), "answered 302", id="redirect"),
    pytest.param((200, {}, b"x" * 1_100_000), "more than 1000000 bytes", id="huge"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("reply", "message"), GARBAGE)
async def test_garbage_answers_raise_a_clear_error(
    reply: tuple[int, dict[str, str], bytes], message: str
) -> None:
    with adhoc_server(lambda seen: reply) as (url, _):
        handler = WebhookReviewHandler(url, poll_interval=0.05)
        with pytest.raises(ReviewProtocolError, match=message):
            await aask(handler, make_request(5, OnTimeoutAction.CONTINUE))


@pytest.mark.anyio
async def test_garbage_on_a_poll_is_an_error_too() -> None:
    answers = iter(
        [json_reply(202, {}, {"Location": "/r/1"}), json_reply(200, {"decision": "sure"})]
    )
    with adhoc_server(lambda seen: next(answers)) as (url, _):
        handler = WebhookReviewHandler(url, poll_interval=0.05)
        with pytest.raises(
            ReviewProtocolError, match=r"/\*\*\*/\*\*\* answered 200 with an unusable decision"
        ):
            await handler.areview(make_request(5))


# -- secrets ------------------------------------------------------------------------------------


@pytest.fixture
def review_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG, logger="agentensemble.review"):
        yield caplog


def test_secrets_stay_out_of_repr_and_logs(review_logs: pytest.LogCaptureFixture) -> None:
    handler = WebhookReviewHandler(
        "http://127.0.0.1:9/hook?token=qtok99999",
        secret="s3cret-value",
        headers={"Authorization": "Bearer tok123456"},
        max_retries=1,
    )
    text = repr(handler)
    assert "s3cret-value" not in text and "tok123456" not in text and "qtok99999" not in text
    assert "secret='***'" in text and "Authorization" in text
    decision = asyncio.run(aask(handler, make_request(1)))
    assert isinstance(decision, ExitEarly)
    assert "review.webhook_attempt_failed" in review_logs.text
    fields = " ".join(str(record.__dict__) for record in review_logs.records)
    assert "url" in fields and "problem" in fields  # the structured fields were captured
    everything = review_logs.text + fields + (decision.reason or "")
    for secret in ("s3cret-value", "tok123456", "qtok99999", "sha256="):
        assert secret not in everything


@pytest.mark.parametrize(
    "kwargs",
    [
        {"url": "ftp://x/y"},
        {"url": "/relative"},
        {"url": "http://h", "poll_interval": 0},
        {"url": "http://h", "max_retries": -1},
        {"url": "http://h", "timeout": -1},
        {"url": "http://h", "request_timeout": 0},
    ],
)
def test_bad_configuration_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        WebhookReviewHandler(**kwargs)
