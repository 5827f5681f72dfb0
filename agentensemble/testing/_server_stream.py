"""Streaming answers of the scripted server: a completion as OpenAI streams it (SSE chunks).

Pure: turns a completion body into the list of ``chat.completion.chunk`` objects; the handler
writes each as one server-sent event in its own HTTP chunk.
"""

from __future__ import annotations

import time
from typing import Any


def pieces(text: str) -> list[str]:
    """Word-sized pieces of ``text``, each keeping its trailing space."""
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + ([words[-1]] if words[-1] else [])


def chunk(completion: dict[str, Any], delta: dict[str, Any], finish: str | None = None) -> Any:
    """One ``chat.completion.chunk`` carrying ``delta``."""
    return {
        "id": completion.get("id", "chatcmpl-x"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": completion.get("model", "test-model"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def stream_chunks(completion: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    """A completion as OpenAI streams it: role, text word by word, each tool call's name then
    its arguments in two fragments, the finish reason, then usage if the client asked."""
    choice = completion["choices"][0]
    message = choice["message"]
    chunks = [chunk(completion, {"role": "assistant", "content": ""})]
    chunks += [chunk(completion, {"content": p}) for p in pieces(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        start = {"index": index, "id": call["id"], "type": "function"}
        start["function"] = {"name": call["function"]["name"], "arguments": ""}
        chunks.append(chunk(completion, {"tool_calls": [start]}))
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            fragment = {"index": index, "function": {"arguments": part}}
            chunks.append(chunk(completion, {"tool_calls": [fragment]}))
    chunks.append(chunk(completion, {}, choice["finish_reason"]))
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        chunks.append({**chunk(completion, {}), "choices": [], "usage": completion["usage"]})
    return chunks


def broken_stream(text: str) -> list[dict[str, Any]]:
    """The start of a streamed answer (``text`` in pieces), for a stream cut off mid-way."""
    partial = {"id": "chatcmpl-broken", "model": "test-model"}
    return [chunk(partial, {"content": piece}) for piece in pieces(text)]


__all__ = ["broken_stream", "pieces", "stream_chunks"]
