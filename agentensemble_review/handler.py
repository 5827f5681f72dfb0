"""The handler protocols: anything with ``review`` (sync) and/or ``areview`` (async) can review."""

from __future__ import annotations

from typing import Protocol, TypeAlias, runtime_checkable

from agentensemble_review.models import ReviewDecision, ReviewRequest


@runtime_checkable
class ReviewHandler(Protocol):
    """Answers a review request with a decision.

    ``review`` is called in a worker thread, so it may block (read a console, call a service).
    A handler may also define ``async def areview(request)``; async callers then use it instead.
    Either way the caller enforces ``request.timeout``; a handler need not, but may.
    """

    def review(self, request: ReviewRequest) -> ReviewDecision:
        """Return ``Continue()``, ``Edit(revised_output)`` or ``ExitEarly(reason)``."""
        ...


@runtime_checkable
class AsyncReviewHandler(Protocol):
    """A handler with the async method; ``aask`` awaits it on the caller's event loop."""

    async def areview(self, request: ReviewRequest) -> ReviewDecision:
        """Async twin of ``ReviewHandler.review``."""
        ...


AnyReviewHandler: TypeAlias = ReviewHandler | AsyncReviewHandler
"""What ``aask`` and ``ask`` accept: a handler with ``review``, ``areview`` or both."""

__all__ = ["AnyReviewHandler", "AsyncReviewHandler", "ReviewHandler"]
