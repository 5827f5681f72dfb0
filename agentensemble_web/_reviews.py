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

MAX_REVIEWS = 1_000
MAX_PENDING = 200


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
    decided: asyncio.Event = field(default_factory=asyncio.Event)

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

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._reviews: OrderedDict[str, PendingReview] = OrderedDict()

    def add(self, review_id: str, run_id: str | None, request: dict[str, Any]) -> PendingReview:
        """Hold a new review (posting the same id again returns the one held: a retry)."""
        held = self.get(review_id)
        if held is not None:
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
        if review is None or review.status != "pending":
            return review
        if review.deadline is not None:
            seconds = min(seconds, max(0.0, review.deadline - time.time()))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(review.decided.wait(), timeout=seconds)
        return self.get(review_id)

    def _expire(self, review: PendingReview) -> None:
        if (
            review.status == "pending"
            and review.deadline is not None
            and time.time() >= review.deadline
        ):
            review.expired = True
            self._publish(review)

    def _publish(self, review: PendingReview) -> None:
        self._hub.publish({"kind": "review", "review": review.view()})


__all__ = ["MAX_PENDING", "PendingReview", "ReviewBoard", "ReviewRefused"]
