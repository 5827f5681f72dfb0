"""The HTTP side of the scripted OpenAI-compatible server: a threading server and its handler.

The handler parses defensively (a bounded body, JSON or a 400), asks its owner for the next
scripted reply and writes it in one send. Each accepted socket gets TCP_NODELAY and a timeout.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentensemble.testing._server_replies import CHAT_PATHS, Fault, ServerOwner, TextReply
from agentensemble.testing._server_stream import broken_stream, stream_chunks

MAX_BODY_BYTES = 16 * 1024 * 1024  # a chat request far larger than any test sends


def _content_length(value: str | None) -> int | None:
    """The declared body length, or None when the header is not a non-negative integer."""
    if value is None or value.strip() == "":
        return 0
    text = value.strip()
    return int(text) if text.isdigit() and len(text) <= 12 else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(
        self, address: tuple[str, int], handler: type[_Handler], owner: ServerOwner
    ) -> None:
        self.owner = owner
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.owner._lock:
            self.owner._connections.add(conn)
            self.owner.connections_opened += 1
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
    owner: ServerOwner
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    server_version = "agentensemble-test-openai/1"

    _streaming = False  # the request asked for stream=True

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read .log instead
        pass

    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        owner = self.owner
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items()}
        length = _content_length(self.headers.get("Content-Length"))
        if length is None:
            self.close_connection = True
            owner._record(path, headers, {}, "error")
            self._send_error(400, "Content-Length is not a non-negative integer")
            return
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            owner._record(path, headers, {}, "error")
            self._send_error(413, f"request body over {MAX_BODY_BYTES} bytes")
            return
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            owner._record(path, headers, {"_raw": raw.decode(errors="replace")}, "error")
            self._send_error(400, "request body is not a JSON object")
            return
        if path not in CHAT_PATHS:
            owner._record(path, headers, body, "error")
            self._send_error(404, f"unknown path {path}", "not_found_error")
            return
        self._streaming = body.get("stream") is True

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
            self._send_error(400, f"openai_server: {type(exc).__name__}: {exc}")
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
        if self._streaming:
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
            self._stream(broken_stream(fault.body or "partial answer"), broken=True)
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


ServerCore = _Server
ServerHandler = _Handler

__all__ = ["MAX_BODY_BYTES", "ServerCore", "ServerHandler"]
