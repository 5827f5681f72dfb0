"""A real, local OpenAI-compatible chat server for end-to-end tests.

It listens on 127.0.0.1 (port 0), records every request, and answers from a script the test
writes: text answers, tool-call answers, or faults (HTTP errors, slow answers, dropped
connections, broken bodies). A responder callable may decide instead of the queue, and a seeded
chaos mode injects random faults in front of the script without consuming it.

    with OpenAIServer() as server:
        server.push_tool_calls([("add", '{"a": 1, "b": 2}')])
        server.push_text("3")
        llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test")

Everything is bounded: sockets time out, delays wake up on shutdown, waits take a timeout.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import random
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

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


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: path, headers (lower-case names), parsed body, what it got."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    outcome: str  # "text", "tool_calls", "fault:<kind>[:<status>]", "chaos:<kind>...", "error"


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def _words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_words(part.get("text", "")) for part in value if isinstance(part, dict))
    return 0


def default_chaos_faults() -> list[Fault]:
    """The fault mix used by chaos mode when the test names none."""
    return [
        Fault.http(429, retry_after=0),
        Fault.http(500),
        Fault.http(502),
        Fault.http(503),
        Fault(kind="drop"),
    ]


class OpenAIServer:
    """A scripted OpenAI-compatible ``/v1/chat/completions`` server on a daemon thread."""

    def __init__(
        self,
        *,
        fault_rate: float = 0.0,
        fault_kinds: Sequence[Fault] | None = None,
        seed: int = 0,
        socket_timeout: float = 10.0,
    ) -> None:
        self._lock = threading.Lock()
        self._script: collections.deque[Reply] = collections.deque()
        self._responder: Responder | None = None
        self._log: list[RecordedRequest] = []
        self._arrivals: list[dict[str, Any]] = []
        self._request_seen = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._socket_timeout = socket_timeout
        self.faults_injected = 0
        self.errors: list[str] = []  # unexpected exceptions inside handlers (should stay empty)
        self.set_chaos(fault_rate, fault_kinds, seed=seed)
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> OpenAIServer:
        """Bind 127.0.0.1 on a free port and serve on a daemon thread."""
        if self._httpd is not None:
            return self
        handler = type("Handler", (_Handler,), {"owner": self, "timeout": self._socket_timeout})
        self._httpd = _Server(("127.0.0.1", 0), handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"openai-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, wake every sleeping handler and cut open keep-alive connections."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ----------------------------------------------------------------- addresses

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Root URL, e.g. ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL to pass as ``api_base``: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    # ----------------------------------------------------------------- scripting

    def push(self, *replies: Reply) -> None:
        """Queue answers, served in order, one per request."""
        with self._lock:
            self._script.extend(replies)

    def push_text(
        self,
        content: str,
        *,
        usage: tuple[int, int] | None = None,
        finish_reason: str = "stop",
        delay: float = 0.0,
    ) -> None:
        """Queue a text answer."""
        self.push(TextReply(content, usage=usage, finish_reason=finish_reason, delay=delay))

    def push_tool_calls(
        self,
        calls: Iterable[tuple[str, str | Mapping[str, Any]]],
        *,
        content: str | None = None,
        usage: tuple[int, int] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Queue a tool-call answer; arguments given as a mapping are JSON-encoded."""
        pairs = tuple(
            (name, args if isinstance(args, str) else json.dumps(args)) for name, args in calls
        )
        self.push(ToolCallsReply(pairs, content=content, usage=usage, delay=delay))

    def push_fault(
        self,
        status: int | None = None,
        *,
        kind: FaultKind | None = None,
        retry_after: float | str | None = None,
        headers: Mapping[str, str] | None = None,
        body: str | None = None,
        delay: float = 0.0,
    ) -> None:
        """Queue a fault: an HTTP status (``push_fault(429, retry_after=1)``) or another kind
        (``push_fault(kind="drop")``)."""
        if kind is None or kind == "status":
            fault = Fault.http(
                status or 500, retry_after=retry_after, headers=headers, body=body, delay=delay
            )
        else:
            fault = Fault(kind=kind, headers=dict(headers or {}), body=body, delay=delay)
        self.push(fault)

    def set_responder(self, responder: Responder | None) -> None:
        """Answer with ``responder(request_json)`` when the queue is empty (called on handler
        threads, possibly concurrently). It returns a Reply or a str (a text answer)."""
        with self._lock:
            self._responder = responder

    def set_chaos(
        self, fault_rate: float, fault_kinds: Sequence[Fault] | None = None, *, seed: int = 0
    ) -> None:
        """Inject a random fault (from ``fault_kinds``) before a request's scripted answer with
        probability ``fault_rate``; a faulted request does not consume the script."""
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError("fault_rate must be between 0 and 1")
        with self._lock:
            self._fault_rate = fault_rate
            self._fault_kinds = list(fault_kinds or default_chaos_faults())
            self._random = random.Random(seed)

    @property
    def pending(self) -> int:
        """Scripted answers not served yet."""
        with self._lock:
            return len(self._script)

    def reset(self) -> None:
        """Forget the script, the responder, chaos and the recorded requests."""
        with self._lock:
            self._script.clear()
            self._responder = None
            self._log.clear()
            self._arrivals.clear()
            self._fault_rate = 0.0
            self.faults_injected = 0

    # ----------------------------------------------------------------- inspection

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request body received so far (parsed JSON), faulted ones included."""
        with self._lock:
            return [entry.body for entry in self._log]

    @property
    def arrivals(self) -> list[dict[str, Any]]:
        """Every chat request body in order of arrival, counted before any fault or delay.

        ``log`` records a request once it is answered, so a slow answer still sleeping (or cut
        short by ``close``) is not there yet; ``arrivals`` counts every attempt a client made.
        """
        with self._lock:
            return list(self._arrivals)

    @property
    def log(self) -> list[RecordedRequest]:
        """Every request with its path, headers and outcome."""
        with self._lock:
            return list(self._log)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Block until at least ``count`` requests arrived; TimeoutError after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._request_seen:
            while len(self._log) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"saw {len(self._log)} requests, expected {count}")
                self._request_seen.wait(remaining)
            return [entry.body for entry in self._log]

    # ----------------------------------------------------------------- internals

    def _record(self, path: str, headers: dict[str, str], body: Any, outcome: str) -> None:
        with self._request_seen:
            self._log.append(RecordedRequest(path, headers, body, outcome))
            self._request_seen.notify_all()

    def _chaos_fault(self) -> Fault | None:
        with self._lock:
            if self._fault_rate <= 0 or self._random.random() >= self._fault_rate:
                return None
            self.faults_injected += 1
            return self._random.choice(self._fault_kinds)

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            if self._script:
                return self._script.popleft()
            responder = self._responder
        if responder is None:
            return None
        reply = responder(body)
        return TextReply(reply) if isinstance(reply, str) else reply

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops; True when it is stopping."""
        return seconds > 0 and self._stopping.wait(seconds)

    def _completion(self, body: dict[str, Any], reply: TextReply | ToolCallsReply) -> bytes:
        n = next(self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(reply, TextReply):
            message["content"] = reply.content
            completion_words = _words(reply.content)
        else:
            message["content"] = reply.content
            message["tool_calls"] = [
                {
                    "id": f"call_{n}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
                for i, (name, args) in enumerate(reply.calls)
            ]
            completion_words = _words(reply.content) + sum(
                _words(args) + 1 for _, args in reply.calls
            )
        if reply.usage is not None:
            prompt_tokens, completion_tokens = reply.usage
        else:
            messages = body.get("messages") or []
            prompt_tokens = max(
                1, sum(_words(m.get("content")) for m in messages if isinstance(m, dict))
            )
            completion_tokens = max(1, completion_words)
        payload = {
            "id": f"chatcmpl-{n}",
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(
        self, address: tuple[str, int], handler: type[_Handler], owner: OpenAIServer
    ) -> None:
        self.owner = owner
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.owner._lock:
            self.owner._connections.add(conn)
        return conn, addr

    def shutdown_request(self, request: Any) -> None:
        with self.owner._lock:
            self.owner._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Keep stderr clean: a client hanging up is normal here; anything else is recorded."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            return
        with self.owner._lock:
            self.owner.errors.append(repr(error))


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    server_version = "agentensemble-test-openai/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read .log instead
        pass

    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    _streaming = False

    def do_POST(self) -> None:
        owner = self.owner
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            owner._record(path, headers, {"_raw": raw.decode(errors="replace")}, "error")
            self._send_error(400, "request body is not JSON")
            return
        self._streaming = bool(isinstance(body, dict) and body.get("stream"))
        if path not in CHAT_PATHS:
            owner._record(path, headers, body, "error")
            self._send_error(404, f"unknown path {path}", "not_found_error")
            return

        with owner._lock:
            owner._arrivals.append(body)
        chaos = owner._chaos_fault()
        if chaos is not None and chaos.kind != "slow":
            owner._record(path, headers, body, f"chaos:{self._label(chaos)}")
            self._fault(chaos)
            return
        if chaos is not None and owner._sleep(chaos.delay):
            return

        try:
            reply = owner._next_reply(body)
            while isinstance(reply, Fault) and reply.kind == "slow":  # scripted latency
                if owner._sleep(reply.delay):
                    return
                reply = owner._next_reply(body)
        except Exception as exc:  # a broken responder: say so loudly, never retry into it
            with owner._lock:
                owner.errors.append(f"responder raised {exc!r}")
            owner._record(path, headers, body, "error")
            self._send_error(400, f"openai_server: responder raised {exc!r}")
            return
        if reply is None:
            owner._record(path, headers, body, "error")
            self._send_error(400, "openai_server: script exhausted and no responder set")
            return
        if isinstance(reply, Fault):
            owner._record(path, headers, body, f"fault:{self._label(reply)}")
            self._fault(reply)
            return
        outcome = "text" if isinstance(reply, TextReply) else "tool_calls"
        owner._record(path, headers, body, outcome)
        if owner._sleep(reply.delay):
            return
        if body.get("stream"):
            self._stream(stream_chunks(json.loads(owner._completion(body, reply)), body))
            return
        self._send(200, owner._completion(body, reply), {"Content-Type": "application/json"})

    # ----------------------------------------------------------------- answers

    @staticmethod
    def _label(fault: Fault) -> str:
        return f"status:{fault.status}" if fault.kind == "status" else fault.kind

    def _fault(self, fault: Fault) -> None:
        if self.owner._sleep(fault.delay):
            return
        if fault.kind == "stream_break" and self._streaming:
            partial = {"id": "chatcmpl-broken", "model": "test-model", "choices": []}
            pieces = _pieces(fault.body or "partial answer")
            self._stream([_chunk(partial, {"content": piece}) for piece in pieces], broken=True)
        elif fault.kind in ("drop", "hang", "stream_break"):
            self._drop()
        elif fault.kind == "truncated":
            data = b'{"id": "chatcmpl-x", "object": "chat.completion", "choices": [{"ind'
            self._send(200, data, {"Content-Type": "application/json"}, declared=len(data) * 2)
            self._drop()
        elif fault.kind == "non_json":
            self._send(
                200,
                (fault.body or "<html>upstream hiccup</html>").encode(),
                {"Content-Type": "application/json"},
            )
        else:
            if fault.body is not None:
                data = fault.body.encode()
                headers = {"Content-Type": "application/json", **fault.headers}
                self._send(fault.status, data, headers)
            else:
                self._send_error(
                    fault.status,
                    f"injected fault {fault.status}",
                    _ERROR_TYPES.get(fault.status, "server_error"),
                    extra_headers=fault.headers,
                )

    def _send_error(
        self,
        status: int,
        message: str,
        error_type: str = "invalid_request_error",
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        payload = {
            "error": {"message": message, "type": error_type, "param": None, "code": str(status)}
        }
        self._send_json(status, payload, extra_headers)

    def _send_json(
        self, status: int, payload: Any, extra_headers: Mapping[str, str] | None = None
    ) -> None:
        headers = {"Content-Type": "application/json", **(extra_headers or {})}
        self._send(status, json.dumps(payload).encode(), headers)

    def _send(
        self,
        status: int,
        data: bytes,
        headers: Mapping[str, str],
        declared: int | None = None,
    ) -> None:
        """Write status, headers and body in one send (no Nagle stalls)."""
        lines = [f"HTTP/1.1 {status} {self.responses.get(status, ('Error',))[0]}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {declared if declared is not None else len(data)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            self.wfile.write(head + data)
        except OSError:
            self.close_connection = True

    def _stream(self, events: list[dict[str, Any]], broken: bool = False) -> None:
        """Server-sent events, one HTTP chunk each, written as they go; ``broken`` cuts the
        connection before the end (no finish reason, no terminating chunk)."""
        head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        head += "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        try:
            self.wfile.write(head.encode("latin-1"))
            for event in events:
                data = f"data: {json.dumps(event)}\n\n".encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            if broken:
                self._drop()
                return
            done = b"data: [DONE]\n\n"
            self.wfile.write(f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _drop(self) -> None:
        """Close the connection without (finishing) an answer."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _pieces(text: str) -> list[str]:
    """Word-sized pieces of ``text``, each keeping its trailing space."""
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + ([words[-1]] if words[-1] else [])


def _chunk(completion: dict[str, Any], delta: dict[str, Any], finish: str | None = None) -> Any:
    return {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": completion["model"],
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def stream_chunks(completion: dict[str, Any], body: dict[str, Any]) -> list[dict[str, Any]]:
    """A completion as OpenAI streams it: role, text word by word, each tool call's name then
    its arguments in two fragments, the finish reason, then usage if the client asked."""
    choice = completion["choices"][0]
    message = choice["message"]
    chunks = [_chunk(completion, {"role": "assistant", "content": ""})]
    chunks += [_chunk(completion, {"content": p}) for p in _pieces(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        start = {"index": index, "id": call["id"], "type": "function"}
        start["function"] = {"name": call["function"]["name"], "arguments": ""}
        chunks.append(_chunk(completion, {"tool_calls": [start]}))
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            fragment = {"index": index, "function": {"arguments": part}}
            chunks.append(_chunk(completion, {"tool_calls": [fragment]}))
    chunks.append(_chunk(completion, {}, choice["finish_reason"]))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**_chunk(completion, {}), "choices": [], "usage": completion["usage"]})
    return chunks


_ERROR_TYPES = {
    401: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "server_error",
    502: "bad_gateway",
    503: "service_unavailable",
    504: "gateway_timeout",
}

__all__ = [
    "Fault",
    "FaultKind",
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "TextReply",
    "ToolCallsReply",
    "default_chaos_faults",
    "stream_chunks",
]
