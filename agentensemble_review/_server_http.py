"""HTTP plumbing of the reference review server: JSON answers, bounded bodies, safe headers."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from agentensemble.serve._hardened import HardenedHTTPServer, HeadDeadline, json_refusal_sync
from agentensemble_review._server_guard import SECURITY_HEADERS

MAX_BODY_BYTES = 1_000_000
MAX_DRAINED_BYTES = 16_000_000
"""An oversized body up to this size is read and dropped, so the client gets its 413 answer."""


class JSONRequestHandler(HeadDeadline):
    """Sends JSON (or any body) with the security headers on every answer; reads bounded bodies
    (size, then JSON shape: the hardened setup's ``json_refusal_sync``); a request head must
    arrive within the server's header deadline (``HeadDeadline``)."""

    server: HardenedHTTPServer

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_header(self, keyword: str, value: str) -> None:
        self._sent_headers = getattr(self, "_sent_headers", set()) | {keyword.lower()}
        super().send_header(keyword, value)

    def end_headers(self) -> None:
        """Every answer (``send_error``'s too) forbids framing, sniffing and caching."""
        sent: set[str] = getattr(self, "_sent_headers", set())
        for name, value in SECURITY_HEADERS.items():
            if name.lower() not in sent:
                super().send_header(name, value)
        self._sent_headers = set()
        super().end_headers()

    def _json(self, status: int, data: Any, headers: Mapping[str, str] | None = None) -> None:
        body = json.dumps(data, ensure_ascii=True).encode()
        self._send(status, body, "application/json", headers)

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._json(status, {"error": message})

    def _body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit() or len(length) > 18:
            self.close_connection = True
            self._error(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
            return None
        size = int(length)
        if size > MAX_BODY_BYTES:
            self.close_connection = True
            if size <= MAX_DRAINED_BYTES:  # read it, so the client sees this answer
                self.read_body(size)  # bounded by the declared size and the body deadline
            self._error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the review request is too large ({size} bytes; at most {MAX_BODY_BYTES})",
            )
            return None
        body = self.read_body(size)
        if len(body) < size:  # gone, or too slow: its socket was shut down
            self.close_connection = True
            return None
        refusal = json_refusal_sync(body, self.server.limits)
        if refusal is not None:
            self.close_connection = True
            self._error(HTTPStatus(refusal[0]), refusal[1])
            return None
        return body

    def _route(self) -> list[str]:
        path = urllib.parse.urlsplit(self.path).path
        return [urllib.parse.unquote(part) for part in path.strip("/").split("/") if part]


__all__ = ["MAX_BODY_BYTES", "MAX_DRAINED_BYTES", "JSONRequestHandler"]
