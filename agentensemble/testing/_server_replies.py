"""What the scripted OpenAI-compatible server answers: replies, faults and the JSON they become.

Plain data plus pure functions, so the server module keeps only the serving and the scripting.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agentensemble.llm.types import ChatResponse

FaultKind = Literal["status", "drop", "truncated", "non_json", "slow", "hang", "stream_break"]

CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})


@dataclass(frozen=True)
class TextReply:
    """A plain assistant answer."""

    content: str
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens); None = word counts
    finish_reason: str = "stop"
    delay: float = 0.0  # seconds to wait before answering (a slow answer)


@dataclass(frozen=True)
class ToolCallsReply:
    """An assistant turn that calls tools: (name, arguments JSON text) pairs, ids generated."""

    calls: tuple[tuple[str, str], ...]
    content: str | None = None
    usage: tuple[int, int] | None = None
    finish_reason: str = "tool_calls"
    delay: float = 0.0


@dataclass(frozen=True)
class Fault:
    """A failure instead of an answer.

    kinds: ``status`` (HTTP ``status`` with ``headers``/``body``), ``drop`` (close the socket
    without answering), ``truncated`` (200 whose body stops half-way), ``non_json`` (200 with a
    body that is not JSON), ``slow`` (wait ``delay``, then serve the next scripted answer, from
    the script or from chaos alike), ``hang`` (wait ``delay``, then drop the connection),
    ``stream_break`` (a streaming request gets the start of an answer, ``body`` as text
    pieces, then the connection drops mid-stream; a plain request is simply dropped).
    """

    kind: FaultKind = "status"
    status: int = 500
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str | None = None
    delay: float = 0.0

    @classmethod
    def http(
        cls,
        status: int,
        *,
        retry_after: float | str | None = None,
        headers: Mapping[str, str] | None = None,
        body: str | None = None,
        delay: float = 0.0,
    ) -> Fault:
        """An HTTP error answer, optionally with a ``Retry-After`` header."""
        all_headers = dict(headers or {})
        if retry_after is not None:
            value = retry_after if isinstance(retry_after, str) else _format_seconds(retry_after)
            all_headers["Retry-After"] = value
        return cls(kind="status", status=status, headers=all_headers, body=body, delay=delay)


Reply = TextReply | ToolCallsReply | Fault
Responder = Callable[[dict[str, Any]], "Reply | str"]
Scripted = Reply | ChatResponse | str  # what a script may hold, as ScriptedChatModel takes


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: path, headers (lower-case names), parsed body, what it got."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    outcome: str  # "text", "tool_calls", "fault:<kind>[:<status>]", "chaos:<kind>...", "error"


class ServerOwner(Protocol):
    """What the HTTP side (``_server_http``) asks of the server that owns it
    (``OpenAICompatibleServer``): kept here, below both, so neither imports the other."""

    _lock: threading.Lock
    _connections: set[socket.socket]
    _arrivals: list[dict[str, Any]]
    connections_opened: int
    errors: list[str]

    def _record(self, path: str, headers: dict[str, str], body: Any, outcome: str) -> None: ...

    def _chaos_fault(self) -> Fault | None: ...

    def _next_reply(self, body: dict[str, Any]) -> Reply | None: ...

    def _sleep(self, seconds: float) -> bool: ...

    def _completion(self, body: dict[str, Any], reply: TextReply | ToolCallsReply) -> bytes: ...


def as_reply(item: Scripted) -> Reply:
    """A script entry as a server reply: text stays text, a ChatResponse keeps its tool calls."""
    if isinstance(item, str):
        return TextReply(item)
    if isinstance(item, ChatResponse):
        if item.tool_calls:
            calls = tuple((call.name, call.arguments) for call in item.tool_calls)
            return ToolCallsReply(calls, content=item.content)
        return TextReply(item.content or "", finish_reason=item.finish_reason or "stop")
    if isinstance(item, TextReply | ToolCallsReply | Fault):
        return item
    raise TypeError(
        "a scripted reply must be a str, a ChatResponse (agentensemble.testing.text / tool_call), "
        f"a TextReply, a ToolCallsReply or a Fault, got {type(item).__name__}"
    )


def default_chaos_faults() -> list[Fault]:
    """The fault mix used by chaos mode when the test names none."""
    return [
        Fault.http(429, retry_after=0),
        Fault.http(500),
        Fault.http(502),
        Fault.http(503),
        Fault(kind="drop"),
    ]


def completion_body(number: int, body: dict[str, Any], reply: TextReply | ToolCallsReply) -> bytes:
    """The ``chat.completion`` JSON for one answer; usage counts words unless the reply says."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if isinstance(reply, TextReply):
        completion_words = _words(reply.content)
    else:
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
            for i, (name, args) in enumerate(reply.calls)
        ]
        completion_words = _words(reply.content) + sum(_words(args) + 1 for _, args in reply.calls)
    if reply.usage is not None:
        prompt_tokens, completion_tokens = reply.usage
    else:
        messages = body.get("messages") or []
        prompt_tokens = max(
            1, sum(_words(m.get("content")) for m in messages if isinstance(m, dict))
        )
        completion_tokens = max(1, completion_words)
    payload = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "test-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return json.dumps(payload).encode()


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def _words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_words(part.get("text", "")) for part in value if isinstance(part, dict))
    return 0


__all__ = [
    "CHAT_PATHS",
    "Fault",
    "FaultKind",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Scripted",
    "TextReply",
    "ToolCallsReply",
    "as_reply",
    "completion_body",
    "default_chaos_faults",
]
