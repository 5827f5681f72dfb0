"""The base of every hardened server (``_hardened.Hardened`` wraps it): Host allow-list, bearer
token(s), bounded bodies.

Hostile requests are refused before the app sees them: a ``Host`` not on the list (DNS
rebinding), a missing or wrong ``Authorization: Bearer`` token when one is set (compared in
constant time; the caller it names goes in ``scope["state"]["caller"]``, else the caller's
address), a body larger than the limit (by ``Content-Length`` and by counting what
actually arrives).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Default request body limit (bytes).
MAX_BODY_BYTES = 1024 * 1024
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_host_names(bind_host: str, extra: Iterable[str] = ()) -> set[str]:
    """Host names a request may carry: loopback names when bound there, else the bound name."""
    names = {"127.0.0.1", "localhost", "[::1]"} if is_loopback(bind_host) else {bind_host}
    if bind_host not in ("0.0.0.0", "::"):
        names.add(bind_host if ":" not in bind_host else f"[{bind_host.strip('[]')}]")
    names.update(name.lower() for name in extra)
    return {name.lower() for name in names}


def host_name(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):
        return value.split("]", 1)[0] + "]"
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HTTPGuard:
    """Wraps an ASGI app; see the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: set[str] | Callable[[str], bool],
        token: str | Mapping[str, str] | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        open_paths: tuple[str, ...] = (),
        foreign_host_status: int = 421,
    ) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        # each caller's name -> its token; one plain token is the caller "token"
        self.tokens = {"token": token} if isinstance(token, str) else dict(token or {})
        self.max_body_bytes = max_body_bytes
        self.open_paths = open_paths  # served without the token (a public agent card)
        self.foreign_host_status = foreign_host_status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self.host_allowed(headers.get("host", "")):
            await refuse(send, self.foreign_host_status, "this server does not answer to that Host")
            return
        caller = self._caller(headers.get("authorization", ""))
        if self.tokens and caller is None and scope.get("path") not in self.open_paths:
            await refuse(send, 401, "a valid 'Authorization: Bearer <token>' is required")
            return
        if caller is None:  # no token: the caller is known by its address only
            client = scope.get("client") or ("", 0)
            caller = f"address:{client[0]}"
        scope.setdefault("state", {})["caller"] = caller
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body_bytes):
            await refuse(send, 413, f"the body is over {self.max_body_bytes} bytes")
            return
        seen = 0
        started = False
        refused = False

        async def bounded_receive() -> Message:
            # past the limit the 413 goes out at once and the app is told the client left: an
            # exception here would be turned into a 500 by the app's own error handling
            nonlocal seen, started, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body_bytes:
                    refused = True
                    if not started:
                        started = True
                        await refuse(send, 413, f"the body is over {self.max_body_bytes} bytes")
                    return {"type": "http.disconnect"}
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the app's answer to a refused request goes nowhere
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, tracking_send)
        except Exception:
            if not refused:  # the app's failure on a refused body is the refusal's, not news
                raise

    def host_allowed(self, value: str) -> bool:
        """Whether a ``Host`` value (or an origin's ``host:port``) names this server."""
        if callable(self.allowed_hosts):
            return self.allowed_hosts(value)
        return host_name(value) in self.allowed_hosts

    def _caller(self, given: str) -> str | None:
        """The name of the caller whose token ``given`` carries (every token compared in
        constant time), or None."""
        found = None
        for name, token in self.tokens.items():
            if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                found = name
        return found


async def refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = [
    "MAX_BODY_BYTES",
    "HTTPGuard",
    "allowed_host_names",
    "host_name",
    "is_loopback",
    "refuse",
]
