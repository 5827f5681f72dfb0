"""One ASGI guard in front of both HTTP servers: Host allow-list, bearer token, bounded bodies.

Hostile requests are refused before the app sees them: a ``Host`` not on the list (DNS
rebinding), a missing or wrong ``Authorization: Bearer`` token when one is set (compared in
constant time), a body larger than the limit (by ``Content-Length`` and by counting what
actually arrives).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
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


def _host_name(value: str) -> str:
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
        allowed_hosts: set[str],
        token: str | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        open_paths: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.open_paths = open_paths  # served without the token (a public agent card)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if _host_name(headers.get("host", "")) not in self.allowed_hosts:
            await _refuse(send, 421, "this server does not answer to that Host")
            return
        if self.token is not None and scope.get("path") not in self.open_paths:
            given = headers.get("authorization", "")
            expected = f"Bearer {self.token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                await _refuse(send, 401, "a valid 'Authorization: Bearer <token>' is required")
                return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body_bytes):
            await _refuse(send, 413, f"the body is over {self.max_body_bytes} bytes")
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
                        await _refuse(send, 413, f"the body is over {self.max_body_bytes} bytes")
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


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


__all__ = ["MAX_BODY_BYTES", "HTTPGuard", "allowed_host_names", "is_loopback"]
