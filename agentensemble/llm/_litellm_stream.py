"""One streamed model turn through litellm: text pieces to the sink, chunks to the assembler.

Used by ``LLM.complete`` only when a streaming run set a sink. Each attempt of the retry policy
streams from the start; when an attempt that already showed text fails, the next one first tells
the sink (``StreamRestarted``), so a UI can drop what it showed.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from agentensemble._base.timeouts import within
from agentensemble.llm.stream_assembly import StreamAssembler
from agentensemble.llm.streaming import DeltaSink
from agentensemble.llm.types import ChatResponse


@dataclass
class StreamAttempts:
    """Across one call's attempts: how many began, and whether the last one showed text."""

    sink: DeltaSink
    attempts: int = 0
    showed_text: bool = False


#: A whole stream may take this many times the call's bound (each gap between pieces of text
#: is bounded by it alone): long answers stream for minutes, an endless one is cut.
STREAM_TOTAL_FACTOR = 10


class StreamDeadline:
    """How long a stream may still take: ``guard`` seconds with no new data (keep-alive
    comments do not count), and ``STREAM_TOTAL_FACTOR * guard`` in all."""

    def __init__(self, guard: float) -> None:
        now = time.monotonic()
        self.guard = guard
        self.idle_since = now
        self.ends = now + STREAM_TOTAL_FACTOR * guard

    def progressed(self) -> None:
        """Data arrived: the wait for the next piece starts again."""
        self.idle_since = time.monotonic()

    def left(self) -> float:
        """Seconds the next read may take; TimeoutError once the stream is over its bound."""
        now = time.monotonic()
        if now >= self.ends or now >= self.idle_since + self.guard:
            raise self.expired()
        return min(self.idle_since + self.guard, self.ends) - now

    def expired(self) -> TimeoutError:
        """The error for a stream past its bound, saying which one."""
        if time.monotonic() >= self.ends:
            total = STREAM_TOTAL_FACTOR * self.guard
            return TimeoutError(f"the stream went on for more than {total:g} s")
        return TimeoutError(f"the stream sent no data for {self.guard:g} s")


async def next_within(iterator: Any, deadline: StreamDeadline) -> Any:
    """The next item (chunk or line), or StopAsyncIteration; our bound on a silent provider."""
    left = deadline.left()
    try:
        return await within(iterator.__anext__(), left)
    except (asyncio.TimeoutError, TimeoutError):
        raise deadline.expired() from None


async def relay(
    stream: Any, assembler: StreamAssembler, state: StreamAttempts, guard: float
) -> None:
    """Feed a stream's chunks to ``assembler``, each within the stall deadline, showing text
    (and reasoning, to a sink that takes it) as it arrives: both ways out stream through this."""
    reasoning = getattr(state.sink, "reasoning", None)  # sinks before ReasoningDelta lack it
    iterator = stream.__aiter__()
    deadline = StreamDeadline(guard)
    while True:
        try:
            chunk = await next_within(iterator, deadline)
        except StopAsyncIteration:
            break
        deadline.progressed()
        piece = assembler.add(chunk)
        if assembler.reasoning_piece and reasoning is not None:
            reasoning(assembler.reasoning_piece)
        if piece:
            state.showed_text = True
            state.sink.text(piece)
            # Let the consumer see the piece now: chunks already buffered would otherwise be
            # read without ever yielding to the loop, delaying the first token to the last.
            await asyncio.sleep(0)


async def stream_turn(
    litellm: Any,
    kwargs: dict[str, Any],
    state: StreamAttempts,
    guard: float,
    provider: str = "openai",
) -> ChatResponse:
    """Stream one attempt of a model call and assemble its ChatResponse."""
    if state.showed_text:
        state.sink.restarted(state.attempts)
        state.showed_text = False
    request = dict(kwargs, stream=True, stream_options={"include_usage": True})
    stream = await within(litellm.acompletion(**request), guard)
    assembler = StreamAssembler(provider)
    await relay(stream, assembler, state, guard)
    return assembler.response()


__all__ = [
    "STREAM_TOTAL_FACTOR",
    "StreamAttempts",
    "StreamDeadline",
    "next_within",
    "relay",
    "stream_turn",
]
