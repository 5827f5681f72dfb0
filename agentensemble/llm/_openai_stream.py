"""One streamed model turn on the openai lane: server-sent events read straight over httpx.

The twin of ``_litellm_stream.stream_turn``: the same request body litellm sends for a stream
(``stream: true`` and ``stream_options: {"include_usage": true}``), the same chunks fed to the
same ``StreamAssembler``, text pieces to the same sink, a restart told to the sink before a new
attempt; so a streaming run reads the same on both lanes. Errors are raised as the transport
gives them (a status error after reading its body), for ``_failures`` to classify.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

from agentensemble.llm._litellm_stream import StreamAttempts, StreamDeadline, next_within
from agentensemble.llm._openai_lane import OpenAIRequest, finish_reason, loop_clients
from agentensemble.llm.stream_assembly import StreamAssembler
from agentensemble.llm.types import ChatResponse
from agentensemble.untrusted import parse_json


def streaming_request(request: OpenAIRequest) -> OpenAIRequest:
    """``request`` asking for a stream with usage, as litellm asks for it."""
    body = json.loads(request.body)
    body.update(stream=True, stream_options={"include_usage": True})
    encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return dataclasses.replace(request, body=encoded.encode("utf-8"))


async def stream_turn(request: OpenAIRequest, state: StreamAttempts, guard: float) -> ChatResponse:
    """Stream one attempt of a model call (``request`` from ``streaming_request``)."""
    import httpx

    if state.showed_text:
        state.sink.restarted(state.attempts)
        state.showed_text = False
    clients = await loop_clients()
    index = clients.acquire()
    assembler = StreamAssembler()
    reasoning = getattr(state.sink, "reasoning", None)  # sinks before ReasoningDelta lack it
    try:
        async with clients.clients[index].stream(
            "POST",
            request.url,
            content=request.body,
            headers=request.headers,
            params=request.params,
            timeout=httpx.Timeout(request.timeout),
        ) as response:
            if response.status_code >= 300:  # redirects are refused, as in _openai_lane
                await response.aread()
                raise httpx.HTTPStatusError(
                    f"HTTP {response.status_code} from {request.url}",
                    request=response.request,
                    response=response,
                )
            lines = response.aiter_lines()
            deadline = StreamDeadline(guard)
            while True:
                try:
                    line = str(await next_within(lines, deadline))
                except StopAsyncIteration:
                    break
                if not line.startswith("data:"):
                    continue  # blank separators, keep-alive comments, event names: no progress
                deadline.progressed()
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                piece = assembler.add(parse_json(data, what="a streamed chunk"))
                if assembler.reasoning_piece and reasoning is not None:
                    reasoning(assembler.reasoning_piece)
                if piece:
                    state.showed_text = True
                    state.sink.text(piece)
                    await asyncio.sleep(0)  # let the consumer see the piece now
    finally:
        clients.release(index)
    answer = assembler.response()
    return dataclasses.replace(answer, finish_reason=finish_reason(answer.finish_reason))


__all__ = ["stream_turn", "streaming_request"]
