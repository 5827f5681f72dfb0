"""Errors raised by the review package; all are ``AgentEnsembleError``s (one ``except`` for all).

None of them ever stands for approval: a review that cannot produce a decision either applies the
request's ``on_timeout`` action or raises one of these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentensemble.errors import AgentEnsembleError

if TYPE_CHECKING:
    from agentensemble_review.models import ReviewRequest


class ReviewError(AgentEnsembleError):
    """Base of every review error."""


class ReviewTimeoutError(ReviewError):
    """No decision arrived in time and the request said ``on_timeout=FAIL``."""

    def __init__(self, message: str, *, request: ReviewRequest | None = None) -> None:
        super().__init__(message)
        self.request = request


class InvalidReviewDecisionError(ReviewError, TypeError):
    """A handler returned something that is not a ``Continue``, ``Edit`` or ``ExitEarly``."""


class ReviewProtocolError(ReviewError):
    """A review webhook answered something unusable (bad JSON, unknown decision, 4xx, ...).

    ``status_code`` is the HTTP status when there was one. The URL in the message never carries
    a query string (it may hold a token).
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ReviewScriptExhaustedError(ReviewError):
    """A ``ScriptedReviewHandler`` was asked for more decisions than it was given."""


__all__ = [
    "InvalidReviewDecisionError",
    "ReviewError",
    "ReviewProtocolError",
    "ReviewScriptExhaustedError",
    "ReviewTimeoutError",
]
