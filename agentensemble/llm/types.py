"""The model seam: what the executor sends to a chat model and what it gets back.

Messages are plain dicts in the OpenAI chat format (what litellm takes as is); tool specs are
OpenAI function-calling specs. Anything with an async ``complete`` of this shape is a ChatModel.

An assistant turn may carry what its provider needs back on the next request (``provider_parts``:
Anthropic's signed thinking blocks, DeepSeek's ``reasoning_content``, Gemini's thought
signatures). ``to_message`` writes them on the message under the names litellm reads, with the
provider they came from under ``PROVIDER_KEY``, so a request to another provider can leave them
out (``LLM.request_kwargs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import Any, Protocol, runtime_checkable

from agentensemble._base.dataclass import dataclass
from agentensemble.outputs import TokenUsage, no_usage

Message = dict[str, Any]
ToolSpec = dict[str, Any]


#: The assistant message's key naming the provider its ``provider_parts`` came from.
PROVIDER_KEY = "_provider"

#: A user or tool message's key holding the ``Image`` / ``Document`` / ``Audio`` that go with it
#: (its ``content`` stays the text, naming each as ``[attachment: NAME]``). ``llm/_messages.py``
#: turns them into the provider's content parts when a request is built; a scripted or custom
#: model sees them here as they are.
ATTACHMENTS_KEY = "_attachments"

#: Finish reasons that mean the provider stopped the turn on its content policy.
FILTER_FINISH_REASONS = frozenset({"content_filter", "safety", "SAFETY", "refusal"})


@dataclass(slots=True)
class ToolCall:
    """One function call requested by the model; ``arguments`` is JSON text as the model sent it.

    ``provider_fields``: what the provider attached to the call and needs back with it (Gemini's
    ``thought_signature``), sent back unchanged on the next turn."""

    id: str
    name: str
    arguments: str
    provider_fields: dict[str, Any] | None = None


@dataclass(frozen=True)
class ProviderPart:
    """One field of an assistant message a provider needs back exactly as it sent it:
    ``field`` is the message key litellm reads (``thinking_blocks``, ``reasoning_content``),
    ``provider`` the litellm provider it came from (``anthropic``, ``deepseek``...)."""

    provider: str
    field: str
    value: Any


@dataclass(slots=True)
class ChatResponse:
    """One model turn: text, tool calls, or both."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=no_usage)  # the shared zero: frozen
    finish_reason: str | None = None
    model: str | None = None
    attempts: int = 1  # tries it took, retries included (set by LLM; 1 for other models)
    reasoning: str | None = None  # the model's reasoning text, when the provider shows it
    refusal: str | None = None  # the provider's refusal words (OpenAI ``message.refusal``)
    provider_parts: tuple[ProviderPart, ...] = ()

    @property
    def refused(self) -> bool:
        """Whether the provider refused the turn or stopped it on its content filter."""
        return bool(self.refusal) or self.finish_reason in FILTER_FINISH_REASONS

    def to_message(self) -> Message:
        """The assistant message to append to the conversation history: the text as the model
        wrote it (beside tool calls too), the calls, and the provider parts to send back."""
        return assistant_message(self.content, self.tool_calls, self.provider_parts)


def assistant_message(
    content: str | None,
    tool_calls: Sequence[ToolCall] = (),
    provider_parts: Sequence[ProviderPart] = (),
) -> Message:
    """``ChatResponse(content, tool_calls, ...).to_message()``, without building the response.

    ``content`` is the text, or ``""`` when there is none: how each provider wants a turn of
    only tool calls is settled when the request is built (``LLM.request_kwargs``)."""
    message: Message = {"role": "assistant", "content": content or ""}
    if tool_calls:
        message["tool_calls"] = [_call_message(call) for call in tool_calls]
    for part in provider_parts:
        message[part.field] = part.value
        message[PROVIDER_KEY] = part.provider
    if PROVIDER_KEY not in message and any(call.provider_fields for call in tool_calls):
        provider = next(
            str(call.provider_fields.get(PROVIDER_KEY, ""))
            for call in tool_calls
            if call.provider_fields
        )
        if provider:
            message[PROVIDER_KEY] = provider
    return message


def _call_message(call: ToolCall) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
    if call.provider_fields:
        fields = {k: v for k, v in call.provider_fields.items() if k != PROVIDER_KEY}
        if fields:
            entry["provider_specific_fields"] = fields
    return entry


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: takes the conversation and the tool specs, answers with one turn."""

    async def complete(
        self, messages: Sequence[Message], *, tools: Sequence[ToolSpec] | None = None
    ) -> ChatResponse:
        """Answer one turn. Raises ``LLMError`` when the provider fails for good."""
        ...


def model_label(model: object) -> str:
    """A short, secret-free name for a model, for logs and events."""
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


__all__ = [
    "ATTACHMENTS_KEY",
    "FILTER_FINISH_REASONS",
    "PROVIDER_KEY",
    "ChatModel",
    "ChatResponse",
    "Message",
    "ProviderPart",
    "ToolCall",
    "ToolSpec",
    "assistant_message",
    "model_label",
]
