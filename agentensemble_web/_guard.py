"""Who may use the console: login, sessions, CSRF, Host and Origin checks, security headers.

One ASGI middleware in front of every route, so no route can forget a check:

- ``Host`` must name this server (loopback, the bound host or an allowed name): 403 otherwise,
  which stops DNS rebinding.
- ``GET /login?token=T`` with the console's token (or a named reviewer's) starts a browser
  session: a random session id in a cookie (HttpOnly, SameSite=Strict, and Secure when the
  request came over HTTPS through a local proxy), a session key delivered
  in the redirect's fragment (``/#key=K``: never sent to a server, never served back; the page
  keeps it in ``sessionStorage``) and a CSRF token the page reads from ``/api/session``.
- The page itself (``/``, ``/static/...``) needs the cookie; every ``/api/`` route needs the
  cookie *and* the key (``X-Session-Key``), or ``Authorization: Bearer <token>`` (the way
  ``WebConsole`` and ``WebReviewHandler`` report in): 401 otherwise. Browsers send the cookie to
  every server of the host whatever its port, so the cookie alone reads and decides nothing.
- A state change (any method but GET/HEAD) must come from no origin or this one (403), from a
  browser session with the session's ``X-CSRF-Token`` (403), with a JSON body (415) of a stated,
  bounded length (411, 413).
- Every answer forbids framing (``X-Frame-Options: DENY``, CSP ``frame-ancestors 'none'``),
  sniffing, referrers and caching.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from agentensemble_review._server_guard import Guard, is_json
from agentensemble_web.store import Store, digest

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "agentensemble_session"
CSRF_HEADER = "x-csrf-token"
KEY_HEADER = "x-session-key"
MAX_BODY_BYTES = 2_000_000
MAX_SESSIONS = 200
SESSION_SECONDS = 12 * 3600

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "x-frame-options": "DENY",
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "cross-origin-resource-policy": "same-origin",
}


@dataclass(frozen=True)
class Session:
    """A logged-in browser: who (``reviewer``), its CSRF token, its key's digest, when it
    started."""

    csrf: str
    created: float
    key_sha256: str = ""
    reviewer: str = "console"


Reviewers = Callable[[str], "str | None"]
"""Who a login token names (a reviewer's name), or None; the console's own token is checked
before."""

Revoked = Callable[[str, float], bool]
"""Whether a reviewer's session started at the given time has lost its access (revoked, or the
name added again since, with a new token)."""


class Sessions:
    """The browser sessions, bounded in memory (the oldest is forgotten) and expiring; kept in
    the store as digests, so an open page survives a restart of the console."""

    def __init__(self, store: Store | None = None) -> None:
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._store = store
        if store is not None:
            store.forget_sessions(time.time() - SESSION_SECONDS)

    def start(self, reviewer: str = "console") -> tuple[str, str, Session]:
        """A new session: its id (the cookie), its key (the fragment) and the session."""
        session_id, key = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        session = Session(secrets.token_urlsafe(32), time.time(), digest(key), reviewer)
        self._remember(session_id, session)
        if self._store is not None:
            self._store.save_session(session_id, key, session.csrf, reviewer, session.created)
        return session_id, key, session

    def _remember(self, session_id: str, session: Session) -> None:
        self._sessions[session_id] = session
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)

    def get(self, session_id: str | None) -> Session | None:
        if not session_id or len(session_id) > 100:
            return None
        session = self._sessions.get(session_id)
        if session is None and self._store is not None:
            stored = self._store.session(session_id)
            if stored is not None:
                session = Session(stored[1], stored[3], stored[0], stored[2])
                self._remember(session_id, session)
        if session is not None and time.time() - session.created > SESSION_SECONDS:
            self._sessions.pop(session_id, None)
            return None
        return session


def _headers(scope: Scope) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return headers


def _cookie(headers: dict[str, str], name: str) -> str | None:
    for part in headers.get("cookie", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def _same(expected: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


async def _answer(
    send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class SecurityMiddleware:
    """The checks of the module docstring, around the console's Starlette app."""

    def __init__(
        self,
        app: ASGIApp,
        guard: Guard,
        sessions: Sessions,
        reviewers: Reviewers | None = None,
        revoked: Revoked | None = None,
    ) -> None:
        self.app = app
        self.guard = guard
        self.sessions = sessions
        self.reviewers = reviewers
        self.revoked = revoked

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [
                    (name.encode(), value.encode())
                    for name, value in SECURITY_HEADERS.items()
                    if name.encode() not in present
                ]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self._check(scope, receive, secured)

    async def _check(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        if not self.guard.host_allowed(headers.get("host")):
            await _answer(send, 403, "this console only answers requests addressed to it")
            return
        if scope["path"] == "/login":
            await self._login(scope, send)
            return
        principal, session = self._principal(headers, scope["path"])
        if principal is None:
            await _answer(
                send,
                401,
                "log in first: open the address printed when the console started",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        if scope["method"] not in ("GET", "HEAD"):
            refusal = self._change_refused(headers, session)
            if refusal is not None:
                await _answer(send, refusal[0], refusal[1])
                return
        scope.setdefault("state", {})["principal"] = principal
        scope["state"]["csrf"] = session.csrf if session is not None else None
        scope["state"]["session_id"] = _cookie(headers, COOKIE) if session is not None else None
        scope["state"]["session_started"] = session.created if session is not None else None
        await self.app(scope, receive, send)

    def _principal(self, headers: dict[str, str], path: str) -> tuple[str | None, Session | None]:
        scheme, _, credential = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() == "bearer" and _same(self.guard.token, credential.strip()):
            return "api", None
        session = self.sessions.get(_cookie(headers, COOKIE))
        if session is None:
            return None, None
        given = headers.get(KEY_HEADER)
        if path.startswith("/api/") and not (given and _same(session.key_sha256, digest(given))):
            return None, None  # the cookie alone: sent by the browser to any port of this host
        if (
            session.reviewer != "console"
            and self.revoked
            and self.revoked(session.reviewer, session.created)
        ):
            return None, None
        return session.reviewer, session

    def _change_refused(
        self, headers: dict[str, str], session: Session | None
    ) -> tuple[int, str] | None:
        if not self.guard.origin_allowed(headers):
            return 403, "requests from another origin are refused"
        if session is not None and not _same(session.csrf, headers.get(CSRF_HEADER)):
            return 403, "missing or wrong CSRF token (reload the page)"
        if not is_json(headers.get("content-type")):
            return 415, "the body must be application/json"
        length = headers.get("content-length")
        if length is None or not length.isdigit() or len(length) > 18:
            return 411, "a Content-Length header is required"
        if int(length) > MAX_BODY_BYTES:
            return 413, f"the body is too large ({length} bytes; at most {MAX_BODY_BYTES})"
        return None

    async def _login(self, scope: Scope, send: Send) -> None:
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = query.get("token", [None])[0]
        reviewer: str | None = None
        if scope["method"] == "GET" and given:
            if _same(self.guard.token, given):
                reviewer = "console"
            elif self.reviewers is not None:
                reviewer = self.reviewers(given)
        if reviewer is None:
            await _answer(send, 401, "a valid token is required to log in")
            return
        session_id, key, _ = self.sessions.start(reviewer)
        cookie = f"{COOKIE}={session_id}; HttpOnly; SameSite=Strict; Path=/"
        if scope.get("scheme") == "https":  # served over TLS (a proxy's X-Forwarded-Proto):
            cookie += "; Secure"  # the browser never sends it over plain HTTP
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", f"/#key={key}".encode()),
                    (b"set-cookie", cookie.encode()),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


__all__ = [
    "COOKIE",
    "CSP",
    "CSRF_HEADER",
    "KEY_HEADER",
    "SECURITY_HEADERS",
    "SecurityMiddleware",
    "Sessions",
]
