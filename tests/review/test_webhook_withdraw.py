"""A run that stops waiting withdraws its review, so a person's late decision is refused.

The handler's own deadline can come before the server's (a handler ``timeout=`` shorter than
the request's, or the request's timeout counted from before the server received it). When it
gives up, it tells the webhook (``POST <webhook>/<id>/withdraw``, signed like the review): the
reference server closes the review like an expired one, so a decision made afterwards answers
410 instead of being recorded and applied nowhere. Best effort: a webhook without the route,
or one that cannot be reached, changes nothing for the run.
"""

from __future__ import annotations

import asyncio
import json
import tracemalloc
import zlib
from datetime import timedelta

import httpx
import pytest
from _review_support import SECRET, adhoc_server, json_reply

from agentensemble_review import (
    Continue,
    ExitEarly,
    OnTimeoutAction,
    ReviewRequest,
    ReviewServer,
    ReviewTiming,
    WebhookReviewHandler,
    sign,
)

pytestmark = pytest.mark.anyio
REVIEW = "run-1:1700000000000:3.0"


def make_request(timeout: float = 60) -> ReviewRequest:
    return ReviewRequest(
        id=REVIEW,
        timing=ReviewTiming.AFTER_EXECUTION,
        task_description="Draft the announcement",
        output="We ship on Monday",
        timeout=timedelta(seconds=timeout),
        on_timeout=OnTimeoutAction.EXIT_EARLY,
    )


def human(server: ReviewServer) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, timeout=5, headers={"Authorization": f"Bearer {server.token}"}
    )


async def test_a_decision_after_the_run_gave_up_is_refused(review_server: ReviewServer) -> None:
    # the server would wait 60 s; the handler gives up after 0.3 s
    handler = WebhookReviewHandler(
        review_server.reviews_url, secret=SECRET, timeout=0.3, poll_interval=0.05
    )
    decision = await handler.areview(make_request(timeout=60))
    assert isinstance(decision, ExitEarly) and decision.timed_out

    with human(review_server) as client:
        late = client.post(f"/reviews/{REVIEW}/decision", json={"decision": "continue"})
        asked = client.get(f"/reviews/{REVIEW}")
        page = client.get("/").text
    assert late.status_code == 410
    assert "given up by the run waiting for it" in late.json()["error"]
    assert "not recorded" in late.json()["error"]
    assert asked.status_code == 410
    (record,) = review_server.store.all()
    assert record.decision is None  # nothing recorded that no run would ever apply
    assert "the run stopped waiting" in page and "data-decision=" not in page


def withdraw(server: ReviewServer, body: bytes, signature: str | None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if signature is not None:
        headers["X-AgentEnsemble-Signature"] = signature
    with httpx.Client(base_url=server.url, timeout=5) as client:
        return client.post(f"/reviews/{REVIEW}/withdraw", content=body, headers=headers)


@pytest.mark.parametrize("signature", [None, "sha256=" + "0" * 64])
async def test_an_unsigned_or_forged_withdrawal_is_refused(
    review_server: ReviewServer, signature: str | None
) -> None:
    """With a secret set, only the run's own (signed) withdrawal closes a review: anyone else
    on the machine could otherwise end a review a person is about to decide."""
    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, poll_interval=0.05)
    pending = handler.areview(make_request())
    task = asyncio.ensure_future(pending)
    await asyncio.to_thread(review_server.wait_for_pending, 5.0)
    refused = withdraw(review_server, json.dumps({"reason": "mischief"}).encode(), signature)
    assert refused.status_code == 401
    review_server.decide(REVIEW, {"decision": "continue"})  # still open: the person decides
    assert await task == Continue()


async def test_a_decided_review_keeps_its_decision(review_server: ReviewServer) -> None:

    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, poll_interval=0.05)
    task = asyncio.ensure_future(handler.areview(make_request()))
    await asyncio.to_thread(review_server.wait_for_pending, 5.0)
    review_server.decide(REVIEW, {"decision": "continue"})
    assert await task == Continue()
    body = json.dumps({"id": REVIEW, "reason": "late"}).encode()
    answer = withdraw(review_server, body, sign(body, SECRET))
    assert answer.status_code == 409
    assert review_server.store.get(REVIEW).decision == Continue()  # type: ignore[union-attr]


async def test_a_webhook_without_the_route_changes_nothing_for_the_run() -> None:
    def respond(seen: object) -> tuple[int, dict[str, str], bytes]:
        if str(getattr(seen, "path", "")).endswith("/withdraw"):
            return json_reply(404, {"error": "not found"})
        return json_reply(202, {"status": "pending"}, {"Location": "/reviews/r"})

    with adhoc_server(respond) as (url, seen):
        handler = WebhookReviewHandler(f"{url}/reviews", timeout=0.3, poll_interval=0.05)
        decision = await handler.areview(make_request())
    assert isinstance(decision, ExitEarly) and decision.timed_out
    assert seen[-1].method == "POST"
    assert seen[-1].path == "/reviews/run-1%3A1700000000000%3A3.0/withdraw"
    assert json.loads(seen[-1].body) == {"id": REVIEW, "reason": decision.reason}


async def test_a_signed_body_replayed_onto_another_review_or_route_closes_nothing(
    review_server: ReviewServer,
) -> None:
    """The signature covers the body only: a withdrawal seen once (a proxy's log, a webhook
    relay) is a valid signature for ever. Replayed onto another pending review's withdraw
    route, or the review's own signed request replayed as a withdrawal, it must close nothing:
    the body must name the review of the route and be a withdrawal (``id`` and ``reason``)."""
    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, poll_interval=0.05)
    task = asyncio.ensure_future(handler.areview(make_request()))
    await asyncio.to_thread(review_server.wait_for_pending, 5.0)
    seen_elsewhere = json.dumps({"id": "run-0:1699999999999:1.0", "reason": "gave up"}).encode()
    own_request = json.dumps({"id": REVIEW, "task_description": "Draft", "output": "x"}).encode()
    unnamed = json.dumps({"reason": "gave up"}).encode()
    for body in (seen_elsewhere, own_request, unnamed):
        answer = withdraw(review_server, body, sign(body, SECRET))
        assert answer.status_code == 400, body
        assert "withdrawal" in answer.json()["error"]
    review_server.decide(REVIEW, {"decision": "continue"})  # still open: the person decides
    assert await task == Continue()


def gzip_bomb(megabytes: int) -> bytes:
    """``megabytes`` MB of spaces, gzip-compressed to a few hundred bytes a MB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * 1_000_000
    return b"".join([*(packer.compress(chunk) for _ in range(megabytes)), packer.flush()])


async def test_a_withdrawal_answered_with_a_gzip_bomb_costs_the_run_nothing() -> None:
    """The withdrawal's answer was read whole and decoded: 100 kB of gzip held 200 MB in the
    run's process. Its body is never read now; the run gets its on_timeout as before."""
    bomb = gzip_bomb(100)

    def respond(seen: object) -> tuple[int, dict[str, str], bytes]:
        if str(getattr(seen, "path", "")).endswith("/withdraw"):
            return 200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, bomb
        return json_reply(202, {"status": "pending"}, {"Location": "/reviews/r"})

    with adhoc_server(respond) as (url, seen):
        handler = WebhookReviewHandler(f"{url}/reviews", timeout=0.3, poll_interval=0.05)
        tracemalloc.start()
        try:
            decision = await handler.areview(make_request())
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert seen[-1].path.endswith("/withdraw")  # it was sent
    assert isinstance(decision, ExitEarly) and decision.timed_out
    assert peak < 30_000_000, f"{peak / 1e6:.0f} MB held for a withdrawal's answer"
