"""Where streamed model text goes: a sink in a context variable, set only while streaming.

``Ensemble.astream`` sets a ``DeltaSink`` for its run; a model that finds one streams (litellm
``stream=True``; the scripted test models cut their text into pieces) and hands every piece of
text to it. With no sink set (``run``/``arun``) models answer in one piece as before, so
streaming costs nothing when nobody listens. The sink turns pieces into ``TokenDelta`` events
attributed to the model call in progress (``run_context.current_model_call``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from agentensemble.events import ReasoningDelta, StreamRestarted, TokenDelta
from agentensemble.redaction import redact_text
from agentensemble.run_context import current_model_call, current_run_id


class DeltaSink(Protocol):
    """Receives a streaming model call's text pieces, and restarts of a broken stream."""

    def text(self, piece: str) -> None: ...

    def restarted(self, attempt: int) -> None: ...


_sink: ContextVar[DeltaSink | None] = ContextVar("agentensemble_delta_sink", default=None)


def current_sink() -> DeltaSink | None:
    """The sink of the streaming run this code belongs to, or None when nobody streams."""
    return _sink.get()


@contextmanager
def use_sink(sink: DeltaSink) -> Iterator[None]:
    """Stream model text to ``sink`` inside the block."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


class EventSink:
    """A DeltaSink that emits ``TokenDelta`` / ``StreamRestarted`` events through ``emit``."""

    def __init__(self, emit: Callable[[Any], None]) -> None:
        self._emit = emit

    def text(self, piece: str) -> None:
        scope = current_model_call()
        self._emit(
            TokenDelta(
                current_run_id(),
                scope.agent_role if scope else "",
                scope.task_name if scope else None,
                piece,
                call_id=scope.call_id if scope else "",
            )
        )

    def reasoning(self, piece: str) -> None:
        """A piece of the model's reasoning: a ``ReasoningDelta``, redacted."""
        scope = current_model_call()
        self._emit(
            ReasoningDelta(
                current_run_id(),
                scope.agent_role if scope else "",
                scope.task_name if scope else None,
                redact_text(piece),
                call_id=scope.call_id if scope else "",
            )
        )

    def restarted(self, attempt: int) -> None:
        scope = current_model_call()
        self._emit(
            StreamRestarted(
                scope.agent_role if scope else "",
                scope.task_name if scope else None,
                attempt,
                scope.call_id if scope else "",
            )
        )


def stream_pieces(text: str) -> list[str]:
    """Cut text into word-sized pieces (each keeps its trailing space) for offline streaming."""
    pieces: list[str] = []
    start = 0
    for index, char in enumerate(text):
        if char == " ":
            pieces.append(text[start : index + 1])
            start = index + 1
    if start < len(text):
        pieces.append(text[start:])
    return pieces


__all__ = ["DeltaSink", "EventSink", "current_sink", "stream_pieces", "use_sink"]
