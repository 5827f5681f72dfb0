"""The model seam: what the executor sends to a chat model and what it gets back.

Messages are plain dicts in the OpenAI chat format (what litellm takes as is); tool specs are
OpenAI function-calling specs. Anything with an async ``complete`` of this shape is a ChatModel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import Any, Protocol, runtime_checkable

from agentensemble._dataclass import dataclass
from agentensemble.outputs import TokenUsage, no_usage

Message = dict[str, Any]
ToolSpec = dict[str, Any]


@dataclass(slots=True)
class ToolCall:
    """One function call requested by the model; ``arguments`` is JSON text as the model sent it."""

    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class ChatResponse:
    """One model turn: text, tool calls, or both."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=no_usage)  # the shared zero: frozen
    finish_reason: str | None = None
    model: str | None = None
    attempts: int = 1  # tries it took, retries included (set by LLM; 1 for other models)

    def to_message(self) -> Message:
        """The assistant message to append to the conversation history. ``content`` is ``""``
        for a turn of only tool calls, never null: local servers' chat templates require it."""
        return assistant_message(self.content, self.tool_calls)


def assistant_message(content: str | None, tool_calls: Sequence[ToolCall] = ()) -> Message:
    """``ChatResponse(content, tool_calls).to_message()``, without building the response."""
    message: Message = {"role": "assistant", "content": content or ""}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in tool_calls
        ]
    return message


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
    "ChatModel",
    "ChatResponse",
    "Message",
    "ToolCall",
    "ToolSpec",
    "assistant_message",
    "model_label",
]
