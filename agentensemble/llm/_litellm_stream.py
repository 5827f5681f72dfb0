"""One streamed model turn through litellm: text pieces to the sink, chunks to the assembler.

Used by ``LLM.complete`` only when a streaming run set a sink. Each attempt of the retry policy
streams from the start; when an attempt that already showed text fails, the next one first tells
the sink (``StreamRestarted``), so a UI can drop what it showed.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Any

from agentensemble.llm.stream_assembly import StreamAssembler
from agentensemble.llm.streaming import DeltaSink
from agentensemble.llm.types import ChatResponse


@dataclass
class StreamAttempts:
    """Across one call's attempts: how many began, and whether the last one showed text."""

    sink: DeltaSink
    attempts: int = 0
    showed_text: bool = False


async def next_within(iterator: Any, guard: float) -> Any:
    """The next item (chunk or line), or StopAsyncIteration; our bound on a silent provider."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(guard):
            return await iterator.__anext__()
    return await asyncio.wait_for(iterator.__anext__(), timeout=guard)


async def stream_turn(
    litellm: Any, kwargs: dict[str, Any], state: StreamAttempts, guard: float
) -> ChatResponse:
    """Stream one attempt of a model call and assemble its ChatResponse."""
    if state.showed_text:
        state.sink.restarted(state.attempts)
        state.showed_text = False
    request = dict(kwargs, stream=True, stream_options={"include_usage": True})
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(guard):
            stream = await litellm.acompletion(**request)
    else:
        stream = await asyncio.wait_for(litellm.acompletion(**request), timeout=guard)
    assembler = StreamAssembler()
    iterator = stream.__aiter__()
    while True:
        try:
            chunk = await next_within(iterator, guard)
        except StopAsyncIteration:
            break
        piece = assembler.add(chunk)
        if piece:
            state.showed_text = True
            state.sink.text(piece)
            # Let the consumer see the piece now: chunks already buffered would otherwise be
            # read without ever yielding to the loop, delaying the first token to the last.
            await asyncio.sleep(0)
    return assembler.response()


__all__ = ["StreamAttempts", "next_within", "stream_turn"]
