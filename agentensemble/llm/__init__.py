"""Chat models: the ChatModel protocol, ``LLM`` on litellm (imported lazily) and retries.

Each name below is imported on first use: the core imports ``agentensemble.llm.types`` (the
protocol and the response types) on every ``import``, and that must not bring in the model
classes, retries and rate limits that only a real model call needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentensemble._base.lazy import lazy_exports

if TYPE_CHECKING:
    from agentensemble.llm.litellm_model import LLM
    from agentensemble.llm.rate_limit import RateLimit, RateLimitedModel
    from agentensemble.llm.response_format import ResponseFormat
    from agentensemble.llm.retry import (
        RetryPolicy,
        is_retryable,
        redact_secrets,
        retry_after_seconds,
    )
    from agentensemble.llm.types import (
        ChatModel,
        ChatResponse,
        Message,
        ToolCall,
        ToolSpec,
        model_label,
    )

_LAZY: dict[str, str] = {
    "LLM": "agentensemble.llm.litellm_model",
    "RateLimit": "agentensemble.llm.rate_limit",
    "RateLimitedModel": "agentensemble.llm.rate_limit",
    "ResponseFormat": "agentensemble.llm.response_format",
    "RetryPolicy": "agentensemble.llm.retry",
    "is_retryable": "agentensemble.llm.retry",
    "redact_secrets": "agentensemble.llm.retry",
    "retry_after_seconds": "agentensemble.llm.retry",
    "ChatModel": "agentensemble.llm.types",
    "ChatResponse": "agentensemble.llm.types",
    "Message": "agentensemble.llm.types",
    "ToolCall": "agentensemble.llm.types",
    "ToolSpec": "agentensemble.llm.types",
    "model_label": "agentensemble.llm.types",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "LLM",
    "ChatModel",
    "ChatResponse",
    "Message",
    "RateLimit",
    "RateLimitedModel",
    "ResponseFormat",
    "RetryPolicy",
    "ToolCall",
    "ToolSpec",
    "is_retryable",
    "model_label",
    "redact_secrets",
    "retry_after_seconds",
]
