"""A reference review webhook: holds pending reviews and lets a human decide on a web page.

Run ``python -m agentensemble_review.server [--host 127.0.0.1] [--port 8765] [--secret S]`` and
point ``WebhookReviewHandler("http://127.0.0.1:8765/reviews", secret=S)`` at it. Endpoints:

- ``POST /reviews``: a review request (JSON, signed when a secret is set: 401 otherwise) -> 202
  with ``Location: /reviews/<id>``. Posting the same id again is idempotent (a retry).
- ``GET /reviews/<id>``: 202 while pending, 200 with the decision JSON once decided.
- ``GET /``: the pending reviews, each with Approve / Edit / Exit buttons.
- ``POST /reviews/<id>/decision``: a decision, as a form or as decision JSON.
- ``GET /reviews``: every review held, as JSON.

Stdlib only (``http.server``). The page and the decision endpoint are unauthenticated: this is
for trying webhook review on one machine, bound to loopback, not a production service.
"""

from __future__ import annotations

import argparse
import html
import ipaddress
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from agentensemble_review.errors import ReviewProtocolError
from agentensemble_review.models import ReviewDecision
from agentensemble_review.protocol import (
    SIGNATURE_HEADER,
    decision_from_json,
    decision_to_json,
    verify_signature,
)

MAX_BODY_BYTES = 1_000_000
MAX_REVIEWS = 1000


@dataclass
class _Record:
    id: str
    request: dict[str, Any]
    received_at: float = field(default_factory=time.time)
    decision: ReviewDecision | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": "pending" if self.decision is None else "decided",
            "request": self.request,
            "decision": None if self.decision is None else decision_to_json(self.decision),
        }


class _Store:
    """The reviews the server holds; thread-safe, bounded (oldest decided ones are dropped)."""

    def __init__(self, capacity: int = MAX_REVIEWS) -> None:
        self._records: dict[str, _Record] = {}
        self._changed = threading.Condition()
        self._capacity = capacity

    def add(self, review_id: str, request: dict[str, Any]) -> _Record | None:
        """The record for ``review_id`` (existing or new); None when full of pending reviews."""
        with self._changed:
            existing = self._records.get(review_id)
            if existing is not None:
                return existing
            if len(self._records) >= self._capacity:
                decided = [r for r in self._records.values() if r.decision is not None]
                if not decided:
                    return None
                del self._records[min(decided, key=lambda r: r.received_at).id]
            record = self._records[review_id] = _Record(review_id, request)
            self._changed.notify_all()
            return record

    def get(self, review_id: str) -> _Record | None:
        with self._changed:
            return self._records.get(review_id)

    def decide(self, review_id: str, decision: ReviewDecision) -> None:
        with self._changed:
            record = self._records.get(review_id)
            if record is None:
                raise KeyError(review_id)
            if record.decision is not None:
                raise ValueError(f"review {review_id} is already decided")
            record.decision = decision
            self._changed.notify_all()

    def all(self) -> list[_Record]:
        with self._changed:
            return sorted(self._records.values(), key=lambda r: r.received_at)

    def wait_for_pending(self, timeout: float) -> _Record | None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:  # bounded by the deadline
                pending = [r for r in self._records.values() if r.decision is None]
                if pending:
                    return min(pending, key=lambda r: r.received_at)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: ReviewServer) -> None:
        self.app = app
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agentensemble-review-server/0.1"
    timeout = 30  # idle keep-alive connections are closed after this many seconds
    server: _HTTPServer

    # -- plumbing ------------------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.app.verbose:
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")

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
        self.send_header("Cache-Control", "no-store")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any, headers: Mapping[str, str] | None = None) -> None:
        body = json.dumps(data, ensure_ascii=False).encode()
        self._send(status, body, "application/json", headers)

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._json(status, {"error": message})

    def _body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            self._error(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
            return None
        size = int(length)
        if size > MAX_BODY_BYTES:
            self.close_connection = True
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BODY_BYTES} bytes")
            return None
        return self.rfile.read(size)

    def _route(self) -> list[str]:
        path = urllib.parse.urlsplit(self.path).path
        return [urllib.parse.unquote(part) for part in path.strip("/").split("/") if part]

    # -- methods -------------------------------------------------------------------------------

    def do_GET(self) -> None:
        parts = self._route()
        store = self.server.app.store
        if not parts:
            page = _page(store.all(), self.server.app.secret_set)
            self._send(HTTPStatus.OK, page.encode(), "text/html; charset=utf-8")
        elif parts == ["reviews"]:
            self._json(HTTPStatus.OK, {"reviews": [r.to_json() for r in store.all()]})
        elif len(parts) == 2 and parts[0] == "reviews":
            record = store.get(parts[1])
            if record is None:
                self._error(HTTPStatus.NOT_FOUND, f"no review with id {parts[1]!r}")
            elif record.decision is None:
                self._json(HTTPStatus.ACCEPTED, {"id": record.id, "status": "pending"})
            else:
                self._json(HTTPStatus.OK, decision_to_json(record.decision))
        else:
            self._error(HTTPStatus.NOT_FOUND, "not found")

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        parts = self._route()
        if parts == ["reviews"]:
            self._create()
        elif len(parts) == 3 and parts[0] == "reviews" and parts[2] == "decision":
            self._decide(parts[1])
        else:
            self._error(HTTPStatus.NOT_FOUND, "not found")

    def _create(self) -> None:
        body = self._body()
        if body is None:
            return
        secret = self.server.app._secret
        if secret and not verify_signature(body, self.headers.get(SIGNATURE_HEADER), secret):
            self._error(HTTPStatus.UNAUTHORIZED, f"missing or invalid {SIGNATURE_HEADER}")
            return
        try:
            request = json.loads(body)
        except ValueError as exc:
            self._error(HTTPStatus.BAD_REQUEST, f"body is not valid JSON: {exc}")
            return
        if not isinstance(request, dict):
            self._error(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
            return
        review_id = request.get("id") or str(uuid.uuid4())
        if not isinstance(review_id, str) or len(review_id) > 200:
            self._error(HTTPStatus.BAD_REQUEST, "'id' must be a string of at most 200 characters")
            return
        record = self.server.app.store.add(review_id, request)
        if record is None:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, "too many pending reviews")
            return
        if record.decision is not None:  # a retried POST of a review already decided
            self._json(HTTPStatus.OK, decision_to_json(record.decision))
            return
        location = f"/reviews/{urllib.parse.quote(review_id, safe='')}"
        self._json(
            HTTPStatus.ACCEPTED,
            {"id": review_id, "status": "pending"},
            {"Location": location},
        )

    def _decide(self, review_id: str) -> None:
        body = self._body()
        if body is None:
            return
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        is_form = content_type == "application/x-www-form-urlencoded"
        try:
            if is_form:
                fields = urllib.parse.parse_qs(body.decode("utf-8"), keep_blank_values=True)
                data = {key: values[-1].replace("\r\n", "\n") for key, values in fields.items()}
                if data.get("decision") != "exit_early" or not data.get("reason"):
                    data.pop("reason", None)
                decision = decision_from_json(data)
            else:
                decision = decision_from_json(body)
        except (ReviewProtocolError, UnicodeDecodeError) as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
            return
        try:
            self.server.app.store.decide(review_id, decision)
        except KeyError:
            self._error(HTTPStatus.NOT_FOUND, f"no review with id {review_id!r}")
            return
        except ValueError as exc:
            self._error(HTTPStatus.CONFLICT, str(exc))
            return
        if is_form:
            self._send(HTTPStatus.SEE_OTHER, b"", "text/plain", {"Location": "/"})
        else:
            self._json(HTTPStatus.OK, {"id": review_id, "status": "decided"})


_CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
.review{border:1px solid #ccc;border-radius:6px;padding:1rem;margin:1rem 0}
pre{background:#f6f6f6;padding:.5rem;white-space:pre-wrap;max-height:20rem;overflow:auto}
textarea{width:100%;min-height:6rem;font-family:monospace}
.meta{color:#666;font-size:.9rem} button{margin-right:.5rem;padding:.3rem .8rem}
"""


def _page(records: list[_Record], secret_set: bool) -> str:
    """The HTML page: pending reviews with their forms, then the last decided ones."""
    esc = html.escape
    pending = [r for r in records if r.decision is None]
    decided = [r for r in records if r.decision is not None][-20:]
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>agentensemble reviews</title>",
        "<meta http-equiv='refresh' content='3'>" if not pending else "",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Pending reviews ({len(pending)})</h1>",
        "<p class='meta'>Signatures are verified.</p>" if secret_set else "",
        "" if pending else "<p>Nothing to review yet; this page refreshes by itself.</p>",
        "<p><a href='/'>Refresh</a></p>" if pending else "",
    ]
    for record in pending:
        req = record.request
        quoted = urllib.parse.quote(record.id, safe="")
        tool = (
            f" &middot; tool <b>{esc(str(req.get('tool_name')))}</b>"
            if req.get("tool_name")
            else ""
        )
        out += [
            "<div class='review'>",
            f"<div class='meta'>{esc(str(req.get('timing', '')))}{tool}"
            f" &middot; id {esc(record.id)} &middot; times out after "
            f"{esc(str(req.get('timeout_seconds', '?')))} s</div>",
            f"<h3>{esc(str(req.get('task_description', '')))}</h3>",
            f"<p><b>{esc(str(req.get('prompt')))}</b></p>" if req.get("prompt") else "",
            f"<pre>{esc(str(req.get('output', '')))}</pre>",
            f"<form method='post' action='/reviews/{quoted}/decision'>",
            f"<textarea name='revised_output'>{esc(str(req.get('output', '')))}</textarea>",
            "<p><input name='reason' placeholder='Reason (for Exit)' size='40'></p>",
            "<button name='decision' value='continue'>Approve</button>",
            "<button name='decision' value='edit'>Edit (send the text above)</button>",
            "<button name='decision' value='exit_early'>Exit</button>",
            "</form></div>",
        ]
    if decided:
        out.append("<h2>Recently decided</h2><ul>")
        for record in reversed(decided):
            assert record.decision is not None
            out.append(
                f"<li>{esc(str(record.request.get('task_description', ''))[:80])}: "
                f"<b>{esc(record.decision.decision)}</b></li>"
            )
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(part for part in out if part)


class ReviewServer:
    """The reference server as an object: ``with ReviewServer(port=0) as server: ...``.

    ``port=0`` picks a free port; ``url`` is the base URL and ``reviews_url`` the webhook URL to
    give a ``WebhookReviewHandler``. ``decide`` records a decision without the web page;
    ``wait_for_pending`` waits for a review to arrive (tests, examples).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        secret: str | None = None,
        *,
        verbose: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self._secret = secret or None
        self.verbose = verbose
        self.store = _Store()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        secret = ", secret='***'" if self._secret else ""
        return f"ReviewServer(host={self.host!r}, port={self.port}{secret})"

    @property
    def secret_set(self) -> bool:
        """Whether POSTed reviews must carry a valid signature."""
        return self._secret is not None

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:8765`` (the real port once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def reviews_url(self) -> str:
        """Where to POST reviews: the ``url`` for a ``WebhookReviewHandler``."""
        return f"{self.url}/reviews"

    def bind(self) -> None:
        """Open the listening socket (``start`` and ``serve_forever`` do it if needed)."""
        if self._httpd is None:
            self._httpd = _HTTPServer((self.host, self.port), self)
            self.port = self._httpd.server_address[1]

    def start(self) -> ReviewServer:
        """Serve in a daemon thread; returns self."""
        self.bind()
        assert self._httpd is not None
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.1},
                name="agentensemble-review-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (the command line's way)."""
        self.bind()
        assert self._httpd is not None
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        finally:
            self._httpd.server_close()
            self._httpd = None

    def stop(self) -> None:
        """Stop serving and close the socket."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None and thread is not None:
            httpd.shutdown()
            thread.join(timeout=5)
        if httpd is not None:
            httpd.server_close()

    def __enter__(self) -> ReviewServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def decide(self, review_id: str, decision: ReviewDecision | Mapping[str, Any]) -> None:
        """Record a decision (a decision object or its JSON dict) for a pending review.

        Raises KeyError for an unknown id, ValueError if already decided.
        """
        if isinstance(decision, Mapping):
            decision = decision_from_json(dict(decision))
        self.store.decide(review_id, decision)

    def pending(self) -> list[dict[str, Any]]:
        """The requests (as received) still waiting for a decision, oldest first."""
        return [r.request for r in self.store.all() if r.decision is None]

    def wait_for_pending(self, timeout: float = 5.0) -> dict[str, Any]:
        """The oldest pending request, waiting up to ``timeout`` s; TimeoutError if none came."""
        record = self.store.wait_for_pending(timeout)
        if record is None:
            raise TimeoutError(f"no pending review arrived within {timeout} s")
        return record.request


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> int:
    """Command line: run the reference review server until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m agentensemble_review.server",
        description="Reference webhook for agentensemble reviews, with a web page to decide.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 = any)")
    parser.add_argument(
        "--secret",
        default=os.environ.get("AGENTENSEMBLE_REVIEW_SECRET"),
        help="verify X-AgentEnsemble-Signature with this secret "
        "(default: $AGENTENSEMBLE_REVIEW_SECRET)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    args = parser.parse_args(argv)
    server = ReviewServer(args.host, args.port, args.secret, verbose=not args.quiet)
    server.bind()
    if not _is_loopback(args.host):
        print(f"warning: listening on {args.host}: the review page has no login", file=sys.stderr)
    signed = "signatures verified" if args.secret else "no secret: signatures not checked"
    print(f"Review server on {server.url} ({signed})", flush=True)
    print(f"Webhook URL: {server.reviews_url}    Open {server.url}/ to decide.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
