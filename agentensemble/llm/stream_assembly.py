"""Streamed chat chunks -> one ChatResponse. Pure: no I/O, no litellm, no event loop.

Takes OpenAI-shaped ``chat.completion.chunk`` objects (litellm's stream objects or plain dicts
from any OpenAI-compatible client), hands back each piece of text as it arrives, and assembles
the tool calls: a call's first delta brings its ``index``, ``id`` and name; later deltas with
the same ``index`` append fragments of its arguments. A stream that ends without a finish reason
was cut off: ``response()`` raises ``IncompleteStreamError`` (a ConnectionError, so the retry
policy tries again from the start).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from agentensemble.llm.types import ChatResponse, ToolCall
from agentensemble.outputs import TokenUsage


class IncompleteStreamError(ConnectionError):
    """The stream ended before the model finished its turn (no finish reason was sent)."""


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAssembler:
    """Feed chunks with ``add``; read the finished turn with ``response``."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._finish_reason: str | None = None
        self._usage: TokenUsage | None = None
        self._model: str | None = None

    def add(self, chunk: Any) -> str:
        """Take one chunk; returns its new text ("" when it carries none)."""
        model = _get(chunk, "model")
        if isinstance(model, str) and model:
            self._model = model
        usage = _get(chunk, "usage")
        if usage is not None:
            prompt = _count(_get(usage, "prompt_tokens"))
            completion = _count(_get(usage, "completion_tokens"))
            total = _count(_get(usage, "total_tokens")) or prompt + completion
            if prompt or completion or total:
                self._usage = TokenUsage(
                    prompt_tokens=prompt, completion_tokens=completion, total_tokens=total
                )
        choices = _get(chunk, "choices") or []
        if not choices:
            return ""
        choice = choices[0]
        finish = _get(choice, "finish_reason")
        if isinstance(finish, str) and finish:
            self._finish_reason = finish
        delta = _get(choice, "delta")
        if delta is None:
            return ""
        for raw in _get(delta, "tool_calls") or []:
            self._add_call(raw)
        text = _get(delta, "content")
        if isinstance(text, str) and text:
            self._text.append(text)
            return text
        return ""

    def _add_call(self, raw: Any) -> None:
        index = _get(raw, "index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = len(self._calls)  # providers that omit the index send whole calls
        call = self._calls.setdefault(index, _PartialCall())
        raw_id = _get(raw, "id")
        if isinstance(raw_id, str) and raw_id and not call.id:
            call.id = raw_id
        function = _get(raw, "function")
        name = _get(function, "name")
        if isinstance(name, str) and name and not call.name:
            call.name = name
        arguments = _get(function, "arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)

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
            )
            for _, call in sorted(self._calls.items())
        ]
        text = self.text
        return ChatResponse(
            content=text if text or not calls else None,
            tool_calls=calls,
            usage=self._usage or TokenUsage(),
            finish_reason=self._finish_reason,
            model=self._model,
        )


__all__ = ["IncompleteStreamError", "StreamAssembler"]
