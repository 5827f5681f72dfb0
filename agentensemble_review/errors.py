"""Errors raised by the review package; all are ``AgentEnsembleError``s (one ``except`` for all).

None of them ever stands for approval: a review that cannot produce a decision either applies the
request's ``on_timeout`` action or raises one of these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentensemble._base.display import escape_for_display
from agentensemble.errors import AgentEnsembleError
from agentensemble.redaction import redact_text

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
    a query string (it may hold a token). The message quotes untrusted text (a webhook's answer),
    so registered secrets are redacted from it and invisible characters escaped.
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(escape_for_display(redact_text(message)))
        self.status_code = status_code


class ReviewRequestRefusedError(ReviewProtocolError):
    """The review service refused the request for its size or content (HTTP 400, 413, 422).

    What is under review comes from the model (a tool's input), so for a tool approval this is
    the model's problem: that call fails, the model is told why, and the run goes on. Nothing is
    approved. ``request_bytes`` is the size of the request body that was refused.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, request_bytes: int = 0
    ) -> None:
        super().__init__(message, status_code=status_code)
        self.request_bytes = request_bytes

    @property
    def problem(self) -> str:
        """Why it was refused, in words for the model (no body text from the service)."""
        if self.status_code == 413:
            return f"the tool input is too large ({self.request_bytes} bytes)"
        return f"the service answered HTTP {self.status_code} for the tool input"


class ReviewDisplayError(ReviewError):
    """A review could not be shown to the human (the console output is closed or failing).

    Never a timeout and never approval: nobody saw the request, so the run stops.
    """


class ReviewScriptExhaustedError(ReviewError):
    """A ``ScriptedReviewHandler`` was asked for more decisions than it was given."""


__all__ = [
    "InvalidReviewDecisionError",
    "ReviewDisplayError",
    "ReviewError",
    "ReviewProtocolError",
    "ReviewRequestRefusedError",
    "ReviewScriptExhaustedError",
    "ReviewTimeoutError",
]
