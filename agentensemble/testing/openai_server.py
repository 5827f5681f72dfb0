"""A real, local OpenAI-compatible chat server for tests over HTTP.

It listens on 127.0.0.1 (port 0), records every request, and answers from a script the test
writes: text answers, tool-call answers, or faults (HTTP errors, slow answers, dropped
connections, broken bodies). A responder callable may decide instead of the queue, and a seeded
chaos mode injects random faults in front of the script without consuming it.

    with OpenAICompatibleServer(["Hello!"]) as server:
        server.push_tool_calls([("add", '{"a": 1, "b": 2}')])
        llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-test")

Everything is bounded: sockets time out, request bodies have a size limit, delays wake up on
shutdown, waits take a timeout.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import random
import socket
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentensemble.testing._server_http import ServerCore, ServerHandler
from agentensemble.testing._server_replies import (
    Fault,
    FaultKind,
    RecordedRequest,
    Reply,
    Responder,
    Scripted,
    TextReply,
    ToolCallsReply,
    as_reply,
    completion_body,
    default_chaos_faults,
)


class OpenAICompatibleServer:
    """A scripted OpenAI-compatible ``/v1/chat/completions`` server on a daemon thread.

    ``responses`` is the script, served in order, one per request: text, ChatResponse values
    (``agentensemble.testing.text`` / ``tool_call``, as ``ScriptedChatModel`` takes), or
    ``TextReply`` / ``ToolCallsReply`` / ``Fault``. Listens on 127.0.0.1 only.
    """

    def __init__(
        self,
        responses: Iterable[Scripted] = (),
        *,
        fault_rate: float = 0.0,
        fault_kinds: Sequence[Fault] | None = None,
        seed: int = 0,
        socket_timeout: float = 10.0,
    ) -> None:
        self._lock = threading.Lock()
        self._script: collections.deque[Reply] = collections.deque(as_reply(r) for r in responses)
        self._responder: Responder | None = None
        self._log: list[RecordedRequest] = []
        self._arrivals: list[dict[str, Any]] = []
        self._request_seen = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._socket_timeout = socket_timeout
        self.faults_injected = 0
        self.connections_opened = 0  # TCP connections accepted: shows whether clients reuse them
        self.errors: list[str] = []  # unexpected exceptions inside handlers (should stay empty)
        self.set_chaos(fault_rate, fault_kinds, seed=seed)
        self._httpd: ServerCore | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> OpenAICompatibleServer:
        """Bind 127.0.0.1 on a free port and serve on a daemon thread."""
        if self._httpd is not None:
            return self
        handler = type(
            "Handler", (ServerHandler,), {"owner": self, "timeout": self._socket_timeout}
        )
        self._httpd = ServerCore(("127.0.0.1", 0), handler, self)
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

    def __enter__(self) -> OpenAICompatibleServer:
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

    def push(self, *replies: Scripted) -> None:
        """Queue answers, served in order, one per request."""
        converted = [as_reply(r) for r in replies]
        with self._lock:
            self._script.extend(converted)

    def add(self, *replies: Scripted) -> OpenAICompatibleServer:
        """Append answers to the script (as ``ScriptedChatModel.add``); returns the server."""
        self.push(*replies)
        return self

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
        threads, possibly concurrently). It returns what a script holds: a str (a text answer),
        a ChatResponse (``text(...)`` / ``tool_call(...)``), a ``TextReply``, a
        ``ToolCallsReply`` or a ``Fault``. Anything else, or an exception, answers HTTP 400 with
        the reason (the client's error then says it) and is kept in ``errors``."""
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
        try:
            return as_reply(reply)
        except TypeError:
            raise TypeError(
                f"set_responder: the responder returned {type(reply).__name__}; it must return "
                "a str (a text answer), a ChatResponse (agentensemble.testing.text / tool_call), "
                "a TextReply, a ToolCallsReply or a Fault"
            ) from None

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops; True when it is stopping."""
        return seconds > 0 and self._stopping.wait(seconds)

    def _completion(self, body: dict[str, Any], reply: TextReply | ToolCallsReply) -> bytes:
        return completion_body(next(self._ids), body, reply)


__all__ = [
    "Fault",
    "FaultKind",
    "OpenAICompatibleServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Scripted",
    "TextReply",
    "ToolCallsReply",
    "default_chaos_faults",
]
