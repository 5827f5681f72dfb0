"""Reviews waiting in the console for a browser decision.

A review handler posts the request and waits; a reviewer decides in the browser. The rules:

- a decision is applied once: a second decision (two reviewers at once) is refused with 409 and
  the decision already taken, so the late reviewer is told who won;
- a review past its timeout is expired: deciding it is refused with 410, and the waiting
  handler applies the request's ``on_timeout``;
- an unknown review is refused with 404;
- for a tool call, an edit must be a JSON object (the tool's arguments): 400 otherwise.

Runs on the server's event loop only, like the hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from agentensemble.untrusted import UntrustedInputError, parse_json
from agentensemble_review.errors import ReviewProtocolError
from agentensemble_review.protocol import decision_from_json, decision_to_json
from agentensemble_web._hub import Hub
from agentensemble_web.store import Store

MAX_REVIEWS = 1_000
MAX_PENDING = 200
ABANDONED_SECONDS = 90.0
"""A pending review nobody has waited for this long is abandoned: its handler is gone (the run's
process ended, or the review was restored after a restart and its run no longer asks). A
``WebReviewHandler`` is always in a long poll (at most 20 s) or retrying, so it never is."""


class ReviewRefused(Exception):
    """A request about a review that cannot be honoured: its HTTP status and a message."""

    def __init__(self, status: HTTPStatus, message: str, extra: dict[str, Any] | None = None):
        super().__init__(message)
        self.status = status
        self.extra = extra or {}


@dataclass
class PendingReview:
    """One review: the request as received (cleaned), its deadline and, once taken, a decision."""

    id: str
    run_id: str | None
    request: dict[str, Any]
    created_at: float
    deadline: float | None
    decision: dict[str, Any] | None = None
    expired: bool = False
    context: dict[str, Any] | None = None
    """Who asks and why (agent role, the model's reasoning), read from the run's events."""
    abandoned: bool = False
    decided: asyncio.Event = field(default_factory=asyncio.Event)
    seen: float = field(default_factory=time.monotonic)
    """When its handler last asked for it (posted it, or waited for its decision)."""
    waiters: int = 0

    @property
    def status(self) -> str:
        if self.decision is not None:
            return "decided"
        return "expired" if self.expired else "pending"

    def view(self) -> dict[str, Any]:
        """What a page or a handler sees."""
        return {
            "id": self.id,
            "run_id": self.run_id,
            "status": self.status,
            "request": self.request,
            "created_at": self.created_at,
            "deadline": self.deadline,
            "decision": self.decision,
            "context": self.context,
            "abandoned": self.abandoned,
        }

    def is_tool_call(self) -> bool:
        return self.request.get("timing") == "during_execution" and bool(
            self.request.get("tool_name")
        )


def _check_tool_edit(revised: str) -> None:
    try:
        value = parse_json(revised, what="the edited tool arguments")
    except UntrustedInputError as exc:
        raise ReviewRefused(HTTPStatus.BAD_REQUEST, str(exc)) from None
    if not isinstance(value, dict):
        raise ReviewRefused(
            HTTPStatus.BAD_REQUEST,
            f"the edited tool arguments must be a JSON object, got {type(value).__name__}",
        )


class ReviewBoard:
    """The reviews held, oldest first; pending ones bounded by ``MAX_PENDING``."""

    def __init__(self, hub: Hub, store: Store) -> None:
        self._hub = hub
        self._store = store
        self._reviews: OrderedDict[str, PendingReview] = OrderedDict()
        self._stopping = False
        for view in store.reviews(MAX_REVIEWS):  # a restart: pending ones wait on, as before
            self._reviews[view["id"]] = PendingReview(
                view["id"],
                view.get("run_id"),
                view.get("request") or {},
                float(view["created_at"]),
                view.get("deadline"),
                view.get("decision"),
                view.get("status") == "expired",
                view.get("context"),
                bool(view.get("abandoned")),
            )

    def release_all(self) -> None:
        """The console is stopping: every long poll answers now (the handler asks again)."""
        self._stopping = True
        for review in self._reviews.values():
            review.decided.set()

    def add(self, review_id: str, run_id: str | None, request: dict[str, Any]) -> PendingReview:
        """Hold a new review (posting the same id again returns the one held: a retry)."""
        held = self.get(review_id)
        if held is not None:
            held.seen = time.monotonic()
            return held
        if sum(1 for r in self._reviews.values() if r.status == "pending") >= MAX_PENDING:
            raise ReviewRefused(HTTPStatus.TOO_MANY_REQUESTS, "too many pending reviews")
        seconds = request.get("timeout_seconds")
        limit = float(seconds) if isinstance(seconds, int | float) and seconds > 0 else None
        now = time.time()
        review = PendingReview(
            review_id, run_id, request, now, now + limit if limit is not None else None
        )
        self._reviews[review_id] = review
        while len(self._reviews) > MAX_REVIEWS:
            done = next((k for k, r in self._reviews.items() if r.status != "pending"), None)
            if done is None:
                break
            del self._reviews[done]
        self._publish(review)
        return review

    def get(self, review_id: str) -> PendingReview | None:
        review = self._reviews.get(review_id)
        if review is not None:
            self._expire(review)
        return review

    def all(self) -> list[PendingReview]:
        for review in self._reviews.values():
            self._expire(review)
        return list(self._reviews.values())

    def decide(self, review_id: str, body: Any, decided_by: str) -> PendingReview:
        """Apply a decision (its JSON); ``ReviewRefused`` when it cannot be applied."""
        try:
            decision = decision_from_json(body)
        except ReviewProtocolError as exc:
            raise ReviewRefused(HTTPStatus.BAD_REQUEST, str(exc)) from None
        review = self.get(review_id)
        if review is None:
            raise ReviewRefused(HTTPStatus.NOT_FOUND, "no review with that id")
        if review.decision is not None:
            raise ReviewRefused(
                HTTPStatus.CONFLICT,
                "this review was already decided by another reviewer",
                {"decision": review.decision},
            )
        if review.expired:
            raise ReviewRefused(
                HTTPStatus.GONE, "this review timed out; its on_timeout rule was applied"
            )
        data = decision_to_json(decision)
        if data["decision"] == "edit" and review.is_tool_call():
            _check_tool_edit(data["revised_output"])
        review.decision = {**data, "decided_by": decided_by, "decided_at": time.time()}
        review.decided.set()
        self._publish(review)
        return review

    def expire_now(self, review_id: str) -> PendingReview | None:
        """The handler gave up waiting: a pending review is expired, so no late decision lands
        (whichever of a decision and this comes first wins)."""
        review = self.get(review_id)
        if review is not None and review.status == "pending":
            review.expired = True
            self._publish(review)
        return review

    async def wait(self, review_id: str, seconds: float) -> PendingReview | None:
        """The review once decided or after ``seconds`` (or its deadline), whichever is first."""
        review = self.get(review_id)
        if review is None or review.status != "pending" or self._stopping:
            return review
        if review.deadline is not None:
            seconds = min(seconds, max(0.0, review.deadline - time.time()))
        review.waiters += 1
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(review.decided.wait(), timeout=seconds)
        finally:
            review.waiters -= 1
            review.seen = time.monotonic()
        return self.get(review_id)

    def add_context(self, review: PendingReview, context: dict[str, Any] | None) -> None:
        """Attach who asks and why once known (the run's events may come after the review)."""
        if context is not None and review.context is None:
            review.context = context
            self._publish(review)

    def waiting_for_context(self, run_ids: set[str]) -> list[PendingReview]:
        """Pending reviews of these runs whose context is not known yet."""
        return [
            r
            for r in self._reviews.values()
            if r.context is None and r.status == "pending" and r.run_id in run_ids
        ]

    def _expire(self, review: PendingReview) -> None:
        if review.status != "pending":
            return
        if review.deadline is not None and time.time() >= review.deadline:
            review.expired = True
            self._publish(review)
        elif not review.waiters and time.monotonic() - review.seen > ABANDONED_SECONDS:
            review.expired = review.abandoned = True
            self._publish(review)

    def _publish(self, review: PendingReview) -> None:
        self._store.save_review(review.view())
        self._hub.publish({"kind": "review", "review": review.view()})


__all__ = ["MAX_PENDING", "PendingReview", "ReviewBoard", "ReviewRefused"]
