"""Chat models: the ChatModel protocol, ``LLM`` on litellm (imported lazily) and retries."""

from agentensemble.llm.litellm_model import LLM
from agentensemble.llm.rate_limit import RateLimit, RateLimitedModel
from agentensemble.llm.response_format import ResponseFormat
from agentensemble.llm.retry import RetryPolicy, is_retryable, redact_secrets, retry_after_seconds
from agentensemble.llm.types import (
    ChatModel,
    ChatResponse,
    Message,
    ToolCall,
    ToolSpec,
    model_label,
)

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
