"""Handlers that need no human: approve everything, or replay a script of decisions (tests)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable

from agentensemble_review.errors import ReviewScriptExhaustedError
from agentensemble_review.models import DECISION_TYPES, Continue, ReviewDecision, ReviewRequest


class AutoApproveReviewHandler:
    """Approves every request at once. For development runs and demos, never for production."""

    def review(self, request: ReviewRequest) -> ReviewDecision:
        """Always ``Continue()``."""
        return Continue()

    async def areview(self, request: ReviewRequest) -> ReviewDecision:
        """Always ``Continue()``, without a worker thread."""
        return Continue()

    def __repr__(self) -> str:
        return "AutoApproveReviewHandler()"


class ScriptedReviewHandler:
    """Answers requests with the given decisions, first in first out; for tests.

    ``requests`` records every request seen, in order. Asking once too often raises
    ``ReviewScriptExhaustedError`` (never approval); ``assert_all_used()`` checks that the whole
    script was consumed. Thread-safe: concurrent tool approvals each take the next decision.
    """

    def __init__(self, decisions: Iterable[ReviewDecision]) -> None:
        items = list(decisions)
        for index, item in enumerate(items):
            if not isinstance(item, DECISION_TYPES):
                raise TypeError(
                    f"ScriptedReviewHandler decision #{index} is {item!r}; expected Continue(), "
                    "Edit(revised_output=...) or ExitEarly(reason=...)"
                )
        self._pending: deque[ReviewDecision] = deque(items)
        self._lock = threading.Lock()
        self.requests: list[ReviewRequest] = []

    @property
    def remaining(self) -> list[ReviewDecision]:
        """The decisions not handed out yet."""
        with self._lock:
            return list(self._pending)

    def review(self, request: ReviewRequest) -> ReviewDecision:
        """The next scripted decision; records ``request``."""
        with self._lock:
            self.requests.append(request)
            if not self._pending:
                raise ReviewScriptExhaustedError(
                    f"ScriptedReviewHandler has no decision left for review #{len(self.requests)} "
                    f"({request.timing.value}, task {request.task_description[:60]!r}"
                    + (f", tool {request.tool_name!r}" if request.tool_name else "")
                    + ")"
                )
            return self._pending.popleft()

    async def areview(self, request: ReviewRequest) -> ReviewDecision:
        """Same as ``review``; it never blocks."""
        return self.review(request)

    def assert_all_used(self) -> None:
        """Raise ``AssertionError`` if some scripted decisions were never asked for."""
        left = self.remaining
        if left:
            raise AssertionError(
                f"ScriptedReviewHandler: {len(left)} decision(s) never used after "
                f"{len(self.requests)} review(s): {left!r}"
            )

    def __repr__(self) -> str:
        return f"ScriptedReviewHandler(remaining={len(self.remaining)}, seen={len(self.requests)})"


__all__ = ["AutoApproveReviewHandler", "ScriptedReviewHandler"]
