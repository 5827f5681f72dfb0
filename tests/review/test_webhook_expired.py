"""WebhookReviewHandler and a review the webhook says has expired (410 Gone).

A 410 means the review's timeout passed on the webhook's side (for example while a durable run's
worker was down): no decision will ever come, so the request's ``on_timeout`` applies, with a
reason that says so. Whatever the 410's body claims, it never approves. A 409 (the webhook holds
another review under this id) fails closed.
"""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from _review_support import SECRET, adhoc_server, json_reply

from agentensemble_review import (
    Continue,
    ExitEarly,
    OnTimeoutAction,
    ReviewProtocolError,
    ReviewRequest,
    ReviewServer,
    ReviewTimeoutError,
    ReviewTiming,
    WebhookReviewHandler,
    sign,
)
from agentensemble_review.protocol import encode_request

GONE = {"id": "r-1", "status": "expired", "error": "review 'r-1' has expired"}


def make_request(on_timeout: OnTimeoutAction, timeout: float = 60) -> ReviewRequest:
    return ReviewRequest(
        id="run-1:1700000000000:3.0",
        timing=ReviewTiming.AFTER_EXECUTION,
        task_description="Draft the announcement",
        output="We ship on Monday",
        timeout=timedelta(seconds=timeout),
        on_timeout=on_timeout,
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    "gone_body",
    [GONE, {"decision": "continue"}, {"decision": "edit", "revised_output": "approved!"}],
)
async def test_a_410_applies_on_timeout_and_never_approves(gone_body: object) -> None:
    with adhoc_server(lambda seen: json_reply(410, gone_body)) as (url, seen):
        handler = WebhookReviewHandler(f"{url}/reviews")
        decision = await handler.areview(make_request(OnTimeoutAction.EXIT_EARLY))
    assert isinstance(decision, ExitEarly)
    assert decision.timed_out
    assert "expired at the review webhook (HTTP 410 Gone)" in (decision.reason or "")
    assert len(seen) == 1  # no retry, no poll: it is over


@pytest.mark.anyio
async def test_a_410_while_polling_applies_on_timeout() -> None:
    def respond(seen: object) -> tuple[int, dict[str, str], bytes]:
        if getattr(seen, "method", "") == "POST":
            return json_reply(202, {"status": "pending"}, {"Location": "/reviews/r-1"})
        return json_reply(410, GONE)

    with adhoc_server(respond) as (url, seen):
        handler = WebhookReviewHandler(f"{url}/reviews", poll_interval=0.01)
        decision = await handler.areview(make_request(OnTimeoutAction.EXIT_EARLY))
    assert isinstance(decision, ExitEarly)
    assert decision.timed_out
    assert [s.method for s in seen] == ["POST", "GET"]


@pytest.mark.anyio
async def test_a_410_with_on_timeout_fail_raises_and_with_continue_continues() -> None:
    with adhoc_server(lambda seen: json_reply(410, GONE)) as (url, _):
        handler = WebhookReviewHandler(f"{url}/reviews")
        with pytest.raises(ReviewTimeoutError, match="410 Gone"):
            await handler.areview(make_request(OnTimeoutAction.FAIL))
        # CONTINUE is what the request itself says to do when nobody answers in time
        assert await handler.areview(make_request(OnTimeoutAction.CONTINUE)) == Continue()


@pytest.mark.anyio
async def test_a_409_fails_closed() -> None:
    conflict = {"error": "a different review is already held under this id"}
    with adhoc_server(lambda seen: json_reply(409, conflict)) as (url, _):
        handler = WebhookReviewHandler(f"{url}/reviews")
        with pytest.raises(ReviewProtocolError, match="holds another review under this id"):
            await handler.areview(make_request(OnTimeoutAction.CONTINUE))


@pytest.mark.anyio
async def test_asking_the_reference_server_again_after_expiry_ends_at_once(
    review_server: ReviewServer,
) -> None:
    """A recovered durable run posts its review again after the timeout passed while no worker
    ran: the server says it expired, and the run applies on_timeout now instead of waiting a
    fresh full timeout (60 s here) for a review nobody can decide any more."""
    request = make_request(OnTimeoutAction.EXIT_EARLY)
    body = encode_request(request)
    headers = {"Content-Type": "application/json", "X-AgentEnsemble-Signature": sign(body, SECRET)}
    first = httpx.post(review_server.reviews_url, content=body, headers=headers, timeout=5)
    assert first.status_code == 202  # the first worker asked, then died
    started = review_server.store.clock()
    review_server.store.clock = lambda: started + 61  # the timeout passed meanwhile

    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET)
    decision = await handler.areview(request)

    assert isinstance(decision, ExitEarly)
    assert "expired at the review webhook" in (decision.reason or "")
    assert len(review_server.store.all()) == 1
