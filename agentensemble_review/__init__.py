"""agentensemble_review: put a human in the loop before a task, during a tool call, after a task.

``HumanInputTool`` lets the agent itself ask the human a question during a task.

Optional at runtime: the core imports it only when a review is configured. Every decision path
fails closed: no answer, end of input, a garbled webhook reply or a crashed handler never counts
as approval. ``WebhookReviewHandler`` and ``ReviewServer`` load on first use (they pull in httpx
and http.server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentensemble_review._asking import aask, apply_on_timeout, ask, check_decision
from agentensemble_review.console import ConsoleReviewHandler
from agentensemble_review.errors import (
    InvalidReviewDecisionError,
    ReviewDisplayError,
    ReviewError,
    ReviewProtocolError,
    ReviewRequestRefusedError,
    ReviewScriptExhaustedError,
    ReviewTimeoutError,
)
from agentensemble_review.handler import AnyReviewHandler, AsyncReviewHandler, ReviewHandler
from agentensemble_review.handlers import AutoApproveReviewHandler, ScriptedReviewHandler
from agentensemble_review.human_input import HumanInputTool
from agentensemble_review.models import (
    Continue,
    Edit,
    ExitEarly,
    OnTimeoutAction,
    Review,
    ReviewDecision,
    ReviewPolicy,
    ReviewRequest,
    ReviewTiming,
    effective_review,
)
from agentensemble_review.protocol import (
    SIGNATURE_HEADER,
    decision_from_json,
    decision_to_json,
    request_to_json,
    sign,
    verify_signature,
)

if TYPE_CHECKING:
    from agentensemble_review.server import ReviewServer
    from agentensemble_review.webhook import WebhookReviewHandler

_LAZY = {
    "WebhookReviewHandler": "agentensemble_review.webhook",
    "ReviewServer": "agentensemble_review.server",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentensemble_review' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "SIGNATURE_HEADER",
    "AnyReviewHandler",
    "AsyncReviewHandler",
    "AutoApproveReviewHandler",
    "ConsoleReviewHandler",
    "Continue",
    "Edit",
    "ExitEarly",
    "HumanInputTool",
    "InvalidReviewDecisionError",
    "OnTimeoutAction",
    "Review",
    "ReviewDecision",
    "ReviewDisplayError",
    "ReviewError",
    "ReviewHandler",
    "ReviewPolicy",
    "ReviewProtocolError",
    "ReviewRequest",
    "ReviewRequestRefusedError",
    "ReviewScriptExhaustedError",
    "ReviewServer",
    "ReviewTimeoutError",
    "ReviewTiming",
    "ScriptedReviewHandler",
    "WebhookReviewHandler",
    "aask",
    "apply_on_timeout",
    "ask",
    "check_decision",
    "decision_from_json",
    "decision_to_json",
    "effective_review",
    "request_to_json",
    "sign",
    "verify_signature",
]
