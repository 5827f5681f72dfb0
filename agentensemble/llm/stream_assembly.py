"""Streamed chat chunks -> one ChatResponse. Pure: no I/O, no litellm, no event loop.

Takes OpenAI-shaped ``chat.completion.chunk`` objects (litellm's stream objects or plain dicts
from any OpenAI-compatible client), hands back each piece of text as it arrives, and assembles
the tool calls: a call's first delta brings its ``index``, ``id`` and name; later deltas with
the same ``index`` append fragments of its arguments. Reasoning pieces (``reasoning_content``),
refusal pieces and Anthropic's streamed thinking blocks (text and signature in pieces) are
assembled too, so a streamed turn keeps what a whole one keeps. A stream that ends without a
finish reason was cut off: ``response()`` raises ``IncompleteStreamError`` (a ConnectionError,
so the retry policy tries again from the start). A stream is bounded like a whole answer: past
``MAX_STREAM_CHARS`` of text, reasoning, refusal, arguments and thinking (each tool call counts
``CALL_CHARS`` more), ``add`` raises ``UntrustedInputError``, so an endless or giant stream is
cut where it passes the bound, not held whole in memory.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from agentensemble.errors import UntrustedInputError
from agentensemble.llm._messages import (
    field_of,
    items_of,
    provider_fields_of,
    read_parts,
    read_usage,
    text_of,
)
from agentensemble.llm.types import PROVIDER_KEY, ChatResponse, ToolCall
from agentensemble.outputs import TokenUsage
from agentensemble.untrusted import MAX_CHARS

#: The most characters one streamed turn may bring (a whole answer's bound: the untrusted
#: parser's, which the openai lane's non-streamed body is held to as well).
MAX_STREAM_CHARS = MAX_CHARS
#: What each tool call costs against the bound besides its text (its id, name and record), so a
#: million empty calls are cut like a million characters.
CALL_CHARS = 64

#: The refusal of a streamed turn whose words did not reach us: the stream opened a refusal
#: (``"refusal": ""``) and wrote nothing else. litellm's stream wrapper drops the refusal
#: pieces that follow (non-streamed answers keep them).
REFUSAL_UNSAID = "(the provider refused; its streamed words were not passed on)"


class IncompleteStreamError(ConnectionError):
    """The stream ended before the model finished its turn (no finish reason was sent)."""


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Thinking:
    """One streamed thinking block: its text and signature arrive in pieces."""

    type: str = "thinking"
    text: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    data: str | None = None  # a redacted block's opaque data

    def block(self) -> dict[str, Any]:
        if self.type == "redacted_thinking":
            return {"type": self.type, "data": self.data or ""}
        return {
            "type": self.type,
            "thinking": "".join(self.text),
            "signature": "".join(self.signature),
        }


class StreamAssembler:
    """Feed chunks with ``add``; read the finished turn with ``response``."""

    def __init__(self, provider: str = "openai") -> None:
        self._provider = provider
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._thinking: list[_Thinking] = []
        self._signatures: list[Any] = []
        self._calls: dict[int, _PartialCall] = {}
        self._finish_reason: str | None = None
        self._usage: TokenUsage | None = None
        self._model: str | None = None
        self._size = 0  # characters taken so far, against MAX_STREAM_CHARS
        self.reasoning_piece = ""  # the reasoning text the last chunk brought ("" for none)

    def _took(self, size: int) -> None:
        self._size += size
        if self._size > MAX_STREAM_CHARS:
            raise UntrustedInputError(
                "the model's stream",
                f"too large (over {MAX_STREAM_CHARS} characters of text, reasoning and tool "
                f"calls; at most {MAX_STREAM_CHARS})",
            )

    def add(self, chunk: Any) -> str:
        """Take one chunk; returns its new text ("" when it carries none)."""
        model = field_of(chunk, "model")
        if isinstance(model, str) and model:
            self._model = model
        self.reasoning_piece = ""
        usage = field_of(chunk, "usage")
        if usage is not None:
            read = read_usage(usage)
            if read.prompt_tokens or read.completion_tokens or read.total_tokens:
                self._usage = read
        choices = items_of(field_of(chunk, "choices"))
        if not choices:
            return ""
        choice = choices[0]
        finish = field_of(choice, "finish_reason")
        if isinstance(finish, str) and finish:
            self._finish_reason = finish
        delta = field_of(choice, "delta")
        if delta is None:
            return ""
        for raw in items_of(field_of(delta, "tool_calls")):
            self._add_call(raw)
        self._add_reasoning(delta)
        refusal = field_of(delta, "refusal")
        if isinstance(refusal, str):  # even "": the turn is a refusal (see REFUSAL_UNSAID)
            self._took(len(refusal))
            self._refusal.append(refusal)
        text = field_of(delta, "content")
        if isinstance(text, str) and text:
            self._took(len(text))
            self._text.append(text)
            return text
        return ""

    def _add_reasoning(self, delta: Any) -> None:
        reasoning = field_of(delta, "reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            self._took(len(reasoning))
            self._reasoning.append(reasoning)
            self.reasoning_piece = reasoning
        for block in items_of(field_of(delta, "thinking_blocks")):
            kind = field_of(block, "type") or "thinking"
            if kind == "redacted_thinking":
                data = text_of(field_of(block, "data"))
                self._took(CALL_CHARS + len(data or ""))
                self._thinking.append(_Thinking(type=kind, data=data))
                continue
            if not self._thinking or self._thinking[-1].signature:
                self._thinking.append(_Thinking())  # a signature ends a block
            current = self._thinking[-1]
            text, signature = field_of(block, "thinking"), field_of(block, "signature")
            if isinstance(text, str):
                self._took(len(text))
                current.text.append(text)
            if isinstance(signature, str):
                self._took(len(signature))
                current.signature.append(signature)
        fields = field_of(delta, "provider_specific_fields")
        signatures = field_of(fields, "thought_signatures")
        if isinstance(signatures, list):
            self._took(CALL_CHARS * len(signatures))
            self._signatures.extend(signatures)

    def _add_call(self, raw: Any) -> None:
        index = field_of(raw, "index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = len(self._calls)  # providers that omit the index send whole calls
        call = self._calls.get(index)
        if call is None:
            self._took(CALL_CHARS)
            call = self._calls[index] = _PartialCall()
        raw_id = field_of(raw, "id")
        if isinstance(raw_id, str) and raw_id and not call.id:
            self._took(len(raw_id))
            call.id = raw_id
        function = field_of(raw, "function")
        name = field_of(function, "name")
        if isinstance(name, str) and name and not call.name:
            self._took(len(name))
            call.name = name
        arguments = field_of(function, "arguments")
        if isinstance(arguments, str):
            self._took(len(arguments))
            call.arguments.append(arguments)
        fields = provider_fields_of(raw, function)
        if fields:
            self._took(CALL_CHARS)
            call.fields.update({k: v for k, v in fields.items() if v is not None})

    def _refusal_text(self, text: str, calls: list[ToolCall]) -> str | None:
        if not self._refusal:
            return None
        words = "".join(self._refusal)
        if words:
            return words
        return None if text or calls else REFUSAL_UNSAID

    @property
    def text(self) -> str:
        """The text received so far."""
        return "".join(self._text)

    def response(self) -> ChatResponse:
        """The assembled turn; ``IncompleteStreamError`` if the stream never finished."""
        if self._finish_reason is None:
            raise IncompleteStreamError(
                "the model's stream ended before the turn was finished (no finish_reason)"
            )
        calls = [
            ToolCall(
                id=call.id or f"call_{uuid.uuid4().hex[:24]}",
                name=call.name,
                arguments="".join(call.arguments) or "{}",
                provider_fields={**call.fields, PROVIDER_KEY: self._provider}
                if call.fields
                else None,
            )
            for _, call in sorted(self._calls.items())
        ]
        text = self.text
        reasoning = "".join(self._reasoning)
        message: dict[str, Any] = {"reasoning_content": reasoning or None}
        if self._thinking:
            message["thinking_blocks"] = [block.block() for block in self._thinking]
        if self._signatures:
            message["provider_specific_fields"] = {"thought_signatures": self._signatures}
        return ChatResponse(
            content=text if text or not calls else None,
            tool_calls=calls,
            usage=self._usage or TokenUsage(),
            finish_reason=self._finish_reason,
            model=self._model,
            reasoning=reasoning or None,
            refusal=self._refusal_text(text, calls),
            provider_parts=read_parts(message, self._provider),
        )


__all__ = [
    "CALL_CHARS",
    "MAX_STREAM_CHARS",
    "REFUSAL_UNSAID",
    "IncompleteStreamError",
    "StreamAssembler",
]
