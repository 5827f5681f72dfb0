"""A replay server: answers model calls with recorded provider traffic, and records what it got.

``ReplayServer`` listens on 127.0.0.1 (an ephemeral port, TCP_NODELAY) and answers each POST with
the next recorded response of the corpus files it was given, in order: a JSON body, or an SSE
stream sent event by event. Every request it receives is kept (``requests``) so a test can assert
what we would send the provider next, e.g. the thinking block sent back byte for byte. It serves
at most ``limit`` requests and stops on ``close()`` (or leaving the ``with`` block).
"""

from __future__ import annotations

import json
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agentensemble import LLM, RetryPolicy

CORPUS = Path(__file__).parent / "corpus"

#: Which recorded path a request may take, by the family's endpoint.
_ENDPOINTS = ("/chat/completions", "/messages", ":generateContent", ":streamGenerateContent")


def load(name: str) -> dict[str, Any]:
    """The corpus file ``corpus/<name>.json`` (``name`` like ``"anthropic/thinking_tools"``)."""
    document: dict[str, Any] = json.loads((CORPUS / f"{name}.json").read_text(encoding="utf-8"))
    return document


def responses(name: str, *indices: int) -> list[dict[str, Any]]:
    """The recorded responses of ``name`` (all, or those at ``indices``), for a server's queue."""
    interactions = load(name)["interactions"]
    chosen = interactions if not indices else [interactions[i] for i in indices]
    return [interaction["response"] for interaction in chosen]


def recorded_request(name: str, index: int) -> Any:
    """The request body the recording's own client sent at ``index`` (None if not kept)."""
    return load(name)["interactions"][index]["request"]["body"]


def sse_events(text: str) -> list[str]:
    """An SSE text split into its events (blank-line separated, ``\n`` or ``\r\n`` as the
    provider wrote them), each with its terminator, to send one by one."""
    events = re.split(r"(?<=\r\n\r\n)|(?<=\n\n)", text)
    return [event for event in events if event.strip()]


def sse_data(text: str) -> list[Any]:
    """The JSON ``data:`` payloads of an SSE text, in order (``[DONE]`` left out)."""
    found = []
    for event in sse_events(text):
        for line in event.splitlines():
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                found.append(json.loads(line[5:]))
    return found


@dataclass
class Received:
    """One request the server got: its path (query string included) and JSON body."""

    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``requests``, not stderr."""

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection.settimeout(10)  # bounded: a stuck client cannot hold a thread forever

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        replay = self.server.replay
        headers = {k.lower(): v for k, v in self.headers.items()}
        known = any(endpoint in self.path for endpoint in _ENDPOINTS)
        answer = replay.take(Received(self.path, body, headers), answer=known)
        if not known:
            self._send_json(404, {"error": {"message": f"replay: unknown endpoint {self.path}"}})
            return
        if answer is None:
            self._send_json(500, {"error": {"message": "replay: no recorded response left"}})
            return
        if "sse" in answer:
            self._send_stream(answer["status"], answer["sse"])
        else:
            self._send_json(answer["status"], answer["body"])

    def _send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, status: int, text: str) -> None:
        self.send_response(status)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in sse_events(text):
            data = event.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    replay: ReplayServer


class ReplayServer:
    """Serves ``queue`` (recorded responses, in order) on 127.0.0.1; see the module doc."""

    def __init__(self, queue: list[dict[str, Any]], *, limit: int = 32) -> None:
        self._queue = list(queue)
        self._limit = limit
        self._lock = threading.Lock()
        self.requests: list[Received] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.replay = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The server's base URL (no path)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def take(self, request: Received, *, answer: bool = True) -> dict[str, Any] | None:
        """Record ``request`` and hand back the next response (None when none is left, or
        when ``answer`` is false: a request to an unknown endpoint uses up nothing)."""
        with self._lock:
            self.requests.append(request)
            if not answer or not self._queue or len(self.requests) > self._limit:
                return None
            return self._queue.pop(0)

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and free the port."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()


#: No waiting between tries: a replayed answer is never transient.
NO_RETRY = RetryPolicy(max_attempts=1)


def model(name: str, server: ReplayServer, *, suffix: str = "", **settings: Any) -> LLM:
    """An ``LLM`` for ``name`` pointed at ``server`` (``suffix``: the path its base URL needs)."""
    return LLM(
        name,
        api_base=server.url + suffix,
        api_key="test-key",
        retry_policy=NO_RETRY,
        **{"lane": "litellm", **settings},
    )


__all__ = [
    "CORPUS",
    "NO_RETRY",
    "Received",
    "ReplayServer",
    "load",
    "model",
    "recorded_request",
    "responses",
    "sse_data",
    "sse_events",
]
