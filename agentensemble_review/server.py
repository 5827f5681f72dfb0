"""A reference review webhook: holds pending reviews and lets a human decide on a web page.

Run ``python -m agentensemble_review.server [--host 127.0.0.1] [--port 8765] [--secret S]`` and
point ``WebhookReviewHandler("http://127.0.0.1:8765/reviews", secret=S)`` at it. It prints, once,
the page's address with its token (``http://127.0.0.1:8765/?token=...``), like Jupyter.

- ``POST /reviews``: a review request (JSON, signed when a secret is set: 401 otherwise) -> 202
  with ``Location: /reviews/<id>``. Posting the same id again is idempotent (a retry, or a
  durable run recovered in another process): the review held is answered (200 with its decision
  once decided), never a new one; the same id with another request is refused (409).
- ``GET /reviews/<id>``: 202 while pending, 200 with the decision JSON once decided, 410 once
  expired: a review whose request has a timeout expires that long after it was first received;
  a decision for it is refused (410) and posting it again does not reopen it (410).
- ``GET /?token=T``: the pending reviews, each with Approve / Edit / Exit buttons.
- ``POST /reviews/<id>/decision`` (token): a decision as JSON.
- ``POST /reviews/<id>/withdraw``: the run stopped waiting (signed when a secret is set); the
  review is closed like an expired one, so a later decision is refused (410).
- ``GET /reviews`` (token): every review held, as JSON.

Safe for what it is, one person's review page on their own machine (see ``_server_guard``):
``Host`` must be this server (no DNS rebinding), state changes must be JSON from no origin or
this one, listing and deciding need the token, no page may frame it, request bodies and pending
reviews per client are bounded. Plain HTTP with no login of its own: put it behind TLS and a real
identity provider before anyone else can reach it.
"""

from __future__ import annotations

import secrets
import socket
import sys
import threading
import urllib.parse
import uuid
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from types import TracebackType
from typing import Any

from agentensemble.redaction import redact_text, register_secret
from agentensemble.serve._hardened import HardenedHTTPServer, Limits, declare_surface
from agentensemble.untrusted import UntrustedInputError, parse_json
from agentensemble_review._server_guard import Guard, is_json, lower_headers
from agentensemble_review._server_http import MAX_BODY_BYTES, JSONRequestHandler
from agentensemble_review._server_page import page_csp, render_page
from agentensemble_review._server_store import (
    MAX_PENDING_PER_CLIENT,
    MAX_REVIEWS,
    Record,
    Refusal,
    ReviewExpiredError,
    Store,
)
from agentensemble_review.errors import ReviewProtocolError
from agentensemble_review.models import ReviewDecision
from agentensemble_review.protocol import (
    SIGNATURE_HEADER,
    decision_from_json,
    decision_to_json,
    verify_signature,
)

SURFACE = declare_surface("review", "the reference review server (agentensemble-review-server)")


class _HTTPServer(HardenedHTTPServer):
    """Bounded by the hardened setup (connections, header deadline, JSON bodies)."""

    allow_reuse_address = True
    surface = SURFACE
    limits = Limits(max_body_bytes=MAX_BODY_BYTES, max_json_items=200_000, max_connections=64)

    def __init__(self, address: tuple[str, int], app: ReviewServer) -> None:
        self.app = app
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up (a killed worker, a closed tab) is normal: no traceback for it."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Handler(JSONRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agentensemble-review-server/0.1"
    timeout = 30  # idle keep-alive connections are closed after this many seconds
    server: _HTTPServer

    # -- plumbing ------------------------------------------------------------------------------

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.app.verbose:  # the token in a page URL is a registered secret: redacted
            sys.stderr.write(f"{self.address_string()} - {redact_text(format % args)}\n")

    def _expired(self, record: Record) -> None:
        """410: the review's timeout passed with no decision; it can never be decided now."""
        self._json(
            HTTPStatus.GONE,
            {"id": record.id, "status": "expired", "error": record.expiry_message()},
        )

    # -- guards --------------------------------------------------------------------------------

    def _host_ok(self) -> bool:
        if self.server.app.guard.host_allowed(self.headers.get("Host")):
            return True
        self.close_connection = True
        self._error(HTTPStatus.FORBIDDEN, "this server only answers requests addressed to it")
        return False

    def _change_ok(self) -> bool:
        """A state change: from no origin or this one, with a JSON body."""
        if not self.server.app.guard.origin_allowed(lower_headers(self.headers.items())):
            self.close_connection = True
            self._error(HTTPStatus.FORBIDDEN, "requests from another origin are refused")
            return False
        if not is_json(self.headers.get("Content-Type")):
            self.close_connection = True
            self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "the body must be application/json")
            return False
        return True

    def _token_ok(self) -> bool:
        if self.server.app.guard.token_given(self.path, lower_headers(self.headers.items())):
            return True
        self._json(
            HTTPStatus.UNAUTHORIZED,
            {"error": "a token is required: open the address printed when the server started"},
            {"WWW-Authenticate": "Bearer"},
        )
        return False

    # -- methods -------------------------------------------------------------------------------

    def do_GET(self) -> None:
        if not self._host_ok():
            return
        parts = self._route()
        app = self.server.app
        if not parts:
            if self._token_ok():
                nonce = secrets.token_urlsafe(16)
                page = render_page(
                    app.store.all(), app.secret_set, app.token, nonce, app.store.clock()
                )
                csp = {"Content-Security-Policy": page_csp(nonce)}
                self._send(HTTPStatus.OK, page.encode(), "text/html; charset=utf-8", csp)
        elif parts == ["reviews"]:
            if self._token_ok():
                now = app.store.clock()
                self._json(HTTPStatus.OK, {"reviews": [r.to_json(now) for r in app.store.all()]})
        elif len(parts) == 2 and parts[0] == "reviews":
            record = app.store.get(parts[1])
            gone = None if record is not None else app.store.gone(parts[1])
            if gone is not None:
                self._json(HTTPStatus.GONE, {"id": parts[1], "status": "expired", "error": gone})
            elif record is None:
                self._error(HTTPStatus.NOT_FOUND, "no review with that id")
            elif record.expired(app.store.clock()):
                self._expired(record)
            elif record.decision is None:
                self._json(HTTPStatus.ACCEPTED, {"id": record.id, "status": "pending"})
            else:
                self._json(HTTPStatus.OK, decision_to_json(record.decision))
        else:
            self._error(HTTPStatus.NOT_FOUND, "not found")

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        if not self._host_ok() or not self._change_ok():
            return
        parts = self._route()
        if parts == ["reviews"]:
            self._create()
        elif len(parts) == 3 and parts[0] == "reviews" and parts[2] == "decision":
            if self._token_ok():
                self._decide(parts[1])
        elif len(parts) == 3 and parts[0] == "reviews" and parts[2] == "withdraw":
            self._withdraw(parts[1])
        else:
            self._error(HTTPStatus.NOT_FOUND, "not found")

    def _signed_body(self) -> bytes | None:
        """The request body, checked against the secret when one is set (401 otherwise)."""
        body = self._body()
        if body is None:
            return None
        secret = self.server.app._secret
        if secret and not verify_signature(body, self.headers.get(SIGNATURE_HEADER), secret):
            self._error(HTTPStatus.UNAUTHORIZED, f"missing or invalid {SIGNATURE_HEADER}")
            return None
        return body

    def _create(self) -> None:
        body = self._signed_body()
        if body is None:
            return
        try:
            request = parse_json(body, what="body")
        except UntrustedInputError as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
            return
        if not isinstance(request, dict):
            self._error(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
            return
        review_id = request.get("id") or str(uuid.uuid4())
        if not isinstance(review_id, str) or len(review_id) > 200:
            self._error(HTTPStatus.BAD_REQUEST, "'id' must be a string of at most 200 characters")
            return
        record = self.server.app.store.add(review_id, request, self.client_address[0])
        if record is Refusal.CLIENT_FULL:
            self._json(HTTPStatus.TOO_MANY_REQUESTS, {"error": record.value}, {"Retry-After": "5"})
            return
        if record is Refusal.DIFFERENT:
            self._error(HTTPStatus.CONFLICT, record.value)
            return
        if record is Refusal.GONE:
            self._json(
                HTTPStatus.GONE, {"id": review_id, "status": "expired", "error": record.value}
            )
            return
        if isinstance(record, Refusal):
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, record.value)
            return
        if record.decision is not None:  # a retried POST of a review already decided
            self._json(HTTPStatus.OK, decision_to_json(record.decision))
            return
        if record.expired(self.server.app.store.clock()):  # asked again too late: stays closed
            self._expired(record)
            return
        location = f"/reviews/{urllib.parse.quote(review_id, safe='')}"
        self._json(
            HTTPStatus.ACCEPTED,
            {"id": review_id, "status": "pending"},
            {"Location": location},
        )

    def _withdraw(self, review_id: str) -> None:
        """The run gave up waiting (its own deadline came first): close the review, so a
        person's later decision is refused (410) instead of recorded and applied nowhere.
        Signed like the review itself when the server has a secret."""
        body = self._signed_body()
        if body is None:
            return
        try:
            given = parse_json(body, what="body")
        except UntrustedInputError:
            given = None
        if self.server.app._secret and not _withdrawal_of(review_id, given):
            # the signature covers the body only: a signed body must say what it signs, or a
            # withdrawal seen once (or the review's own request) closes any review, for ever
            self._error(
                HTTPStatus.BAD_REQUEST,
                "a signed withdrawal's body is {'id': <this review's id>, 'reason': ...}: "
                "it does not name this review, or is not a withdrawal",
            )
            return
        reason = given.get("reason") if isinstance(given, dict) else None
        try:
            record = self.server.app.store.withdraw(
                review_id, reason if isinstance(reason, str) else ""
            )
        except KeyError:
            self._error(HTTPStatus.NOT_FOUND, "no review with that id")
            return
        if record.decision is not None:
            self._error(HTTPStatus.CONFLICT, f"review {review_id} is already decided")
            return
        self._json(HTTPStatus.OK, {"id": review_id, "status": "expired"})

    def _decide(self, review_id: str) -> None:
        body = self._body()
        if body is None:
            return
        try:
            decision = decision_from_json(body)
        except ReviewProtocolError as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
            return
        try:
            self.server.app.store.decide(review_id, decision)
        except KeyError:
            self._error(HTTPStatus.NOT_FOUND, "no review with that id")
            return
        except ReviewExpiredError as exc:
            self._json(
                HTTPStatus.GONE,
                {"id": review_id, "status": "expired", "error": f"{exc}; it was not recorded"},
            )
            return
        except ValueError as exc:
            self._error(HTTPStatus.CONFLICT, str(exc))
            return
        self._json(HTTPStatus.OK, {"id": review_id, "status": "decided"})


def _withdrawal_of(review_id: str, body: object) -> bool:
    """Whether ``body`` is a withdrawal of ``review_id``: ``{"id": review_id, "reason": ...}``
    and nothing else (the shape ``WebhookReviewHandler`` sends)."""
    return (
        isinstance(body, dict)
        and body.get("id") == review_id
        and set(body) <= {"id", "reason"}
        and isinstance(body.get("reason", ""), str)
    )


class ReviewServer:
    """The reference server as an object: ``with ReviewServer(port=0) as server: ...``.

    ``port=0`` picks a free port; ``url`` is the base URL and ``reviews_url`` the webhook URL to
    give a ``WebhookReviewHandler``; ``page_url`` is the review page with its token. ``token``
    (default: a random one) is needed to list and decide reviews; ``allowed_hosts`` adds host
    names the server answers to besides loopback and ``host``; ``max_pending_per_client`` bounds
    the pending reviews of one client address. ``decide`` records a decision without the web
    page; ``wait_for_pending`` waits for a review to arrive (tests, examples).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        secret: str | None = None,
        *,
        verbose: bool = False,
        token: str | None = None,
        allowed_hosts: Iterable[str] = (),
        max_pending_per_client: int = MAX_PENDING_PER_CLIENT,
    ) -> None:
        if max_pending_per_client < 1:
            raise ValueError("max_pending_per_client must be at least 1")
        self.host = host
        self.port = port
        self._secret = secret or None
        self.token = token or secrets.token_urlsafe(24)
        register_secret(self._secret)
        register_secret(self.token)
        self._allowed_hosts = tuple(allowed_hosts)
        self.verbose = verbose
        self.store = Store(MAX_REVIEWS, max_pending_per_client)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        secret = ", secret='***'" if self._secret else ""
        return f"ReviewServer(host={self.host!r}, port={self.port}{secret}, token='***')"

    @property
    def guard(self) -> Guard:
        """The request checks, for the port actually bound."""
        return Guard(self.host, self.port, self.token, self._allowed_hosts)

    @property
    def page_url(self) -> str:
        """The review page's address, token included (give it only to the reviewer)."""
        return f"{self.url}/?token={urllib.parse.quote(self.token, safe='')}"

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

        Raises KeyError for an unknown id, ValueError if already decided, and
        ``ReviewExpiredError`` (a ValueError) if its timeout passed with no decision.
        """
        if isinstance(decision, Mapping):
            decision = decision_from_json(dict(decision))
        self.store.decide(review_id, decision)

    def pending(self) -> list[dict[str, Any]]:
        """The requests (as received) still waiting for a decision, oldest first (an expired
        review waits for nothing any more)."""
        now = self.store.clock()
        return [r.request for r in self.store.all() if r.decision is None and not r.expired(now)]

    def wait_for_pending(self, timeout: float = 5.0) -> dict[str, Any]:
        """The oldest pending request, waiting up to ``timeout`` s; TimeoutError if none came."""
        record = self.store.wait_for_pending(timeout)
        if record is None:
            raise TimeoutError(f"no pending review arrived within {timeout} s")
        return record.request


def main(argv: list[str] | None = None) -> int:
    """Command line: run the reference review server until Ctrl-C (see ``_server_cli``)."""
    from agentensemble_review._server_cli import main as cli_main

    return cli_main(argv, ReviewServer)


__all__ = ["MAX_BODY_BYTES", "ReviewExpiredError", "ReviewServer", "main"]


if __name__ == "__main__":
    sys.exit(main())
