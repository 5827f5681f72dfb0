"""The one hardened server setup: every HTTP server the package runs is built through here.

A served surface (the A2A agent, MCP over HTTP, the web console, and any later one) declares
itself with ``declare_surface`` at import and wraps its ASGI app with ``Hardened``; it is then
served by ``hardened_server``, which refuses an app that did not go through ``Hardened``. So a
new server gets every defence, and ``tests/serve/test_hardened_surfaces.py`` walks every
declared surface and attacks each one (a surface with no example there fails the test).

Per request (``Hardened``, in this order):

- ``Host`` not naming this server (DNS rebinding): 421 (the console: 403);
- a missing or wrong ``Authorization: Bearer`` token, when one is set: 401;
- a state change (POST, PUT, PATCH, DELETE) from another site (``Origin`` not this server's,
  its port too: the one given, else the one the request came in on; ``Sec-Fetch-Site``
  neither ``same-origin`` nor ``none``): 403;
- a body sent with POST/PUT/PATCH that is not ``application/json`` (a page's ``text/plain``
  "simple request" needs no CORS preflight): 415;
- a body over ``max_body_bytes`` (declared or counted): 413;
- a body not complete within ``body_timeout`` seconds of its headers (default: the
  ``header_timeout``): 408;
- JSON nested deeper than ``max_json_depth``, or not JSON: 400; holding more than
  ``max_json_items`` values (250,000 empty lists froze the A2A SDK's parser for seconds): 413,
  arrays and objects counted on the raw bytes before any parsing. Bodies are parsed by
  ``agentensemble.untrusted`` (off the event loop when large) before the app parses them.

Per connection (``hardened_server``, uvicorn with the ``h11`` protocol; ``HardenedHTTPServer``
and ``HeadDeadline`` give the stdlib review server the same bounds):

- at most ``max_connections`` open: the next one gets ``503`` and is closed at once, so sockets
  never run out (per-caller limits are the surfaces' own: A2A tasks, MCP sessions);
- a request's headers must be complete within ``header_timeout`` seconds of the connection
  opening (or of the next request's first byte): a client that never finishes them
  (slowloris) gets ``408`` and is closed; uvicorn has no such deadline of its own;
- idle keep-alive connections close after ``keep_alive_seconds``; a header block over
  ``max_header_bytes`` gets ``431`` and is closed (h11's own bound,
  ``h11_max_incomplete_event_size``, only holds for a block arriving in pieces).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import urllib.parse
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentensemble._base.timeouts import within
from agentensemble.errors import UntrustedInputError
from agentensemble.serve._http_guard import (
    MAX_BODY_BYTES,
    ASGIApp,
    HTTPGuard,
    Message,
    Receive,
    Scope,
    Send,
    refuse,
)
from agentensemble.untrusted import aparse_json, parse_json

CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Methods that change state: checked for a cross-site origin."""
WITH_JSON_BODY = frozenset({"POST", "PUT", "PATCH"})
"""Methods whose body must be JSON."""
PARSED = "hardened_json"
"""``scope["state"]`` key of a request's body as parsed (and checked) by ``Hardened``."""


@dataclass(frozen=True)
class Limits:
    """The bounds of one served surface; the defaults suit a local agent server."""

    max_body_bytes: int = MAX_BODY_BYTES
    max_json_depth: int = 64
    max_json_items: int = 20_000
    header_timeout: float = 10.0
    body_timeout: float | None = None
    """Seconds a JSON body has to arrive once its headers are in (None: ``header_timeout``)."""
    keep_alive_seconds: int = 5
    max_connections: int = 256
    max_header_bytes: int = 64 * 1024


SURFACES: dict[str, str] = {}
"""Every surface the package can serve: name -> what it is (filled by ``declare_surface``)."""
_BUILT: dict[str, weakref.WeakSet[Hardened]] = {}


def declare_surface(name: str, what: str) -> str:
    """Declare a served surface (at import of its module); returns ``name`` for ``Hardened``."""
    SURFACES.setdefault(name, what)
    return name


def built(surface: str) -> list[Hardened]:
    """The live ``Hardened`` wrappers of ``surface`` (what the surface walk checks)."""
    return list(_BUILT.get(surface, ()))


def same_site(
    headers: Mapping[str, str], port: int | None, host_allowed: Callable[[str], bool]
) -> bool:
    """No ``Origin`` (not a browser) or this server's own (``host_allowed`` and ``port``, any
    port when None); never a cross-site fetch (``Sec-Fetch-Site``). ``headers``: lower-case
    names. The one origin rule of every server (the review server's and console's ``Guard``)."""
    site = headers.get("sec-fetch-site")
    if site is not None and site.lower() not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    parts = urllib.parse.urlsplit(origin.strip())
    try:
        given = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and (port is None or given == port)
        and parts.hostname is not None
        and host_allowed(parts.netloc)
    )


def _served_port(scope: Scope) -> int | None:
    """The port a request came in on (a surface built without ``port``): a page on another
    local port is another origin (it was taken for this server's own)."""
    server = scope.get("server")
    if server and isinstance(server[1], int):
        return int(server[1])
    return None


def count_items(value: Any, limit: int) -> bool:
    """Whether ``value`` holds more than ``limit`` values (containers and scalars, iterative)."""
    seen = 0
    stack = [value]
    while stack:
        node = stack.pop()
        seen += 1
        if seen > limit:
            return True
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


class Hardened:
    """The per-request defences of the module docstring around one surface's ASGI app.

    Usable directly (``Hardened(app, surface=..., ...)``) or as a Starlette middleware
    (``Middleware(Hardened, surface=..., ...)``)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        surface: str,
        allowed_hosts: set[str] | Callable[[str], bool],
        port: int | None = None,
        token: str | Mapping[str, str] | None = None,
        open_paths: tuple[str, ...] = (),
        limits: Limits = Limits(),
        foreign_host_status: int = 421,
    ) -> None:
        if surface not in SURFACES:
            raise ValueError(f"undeclared surface {surface!r}: call declare_surface first")
        self.surface = surface
        self.limits = limits
        self.port = port
        self.app = app
        self._guard = HTTPGuard(
            self._checked,
            allowed_hosts=allowed_hosts,
            token=token,
            max_body_bytes=limits.max_body_bytes,
            open_paths=open_paths,
            foreign_host_status=foreign_host_status,
        )
        _BUILT.setdefault(surface, weakref.WeakSet()).add(self)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._guard(scope, receive, send)

    async def _checked(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
        method = scope.get("method", "GET")
        port = self.port if self.port is not None else _served_port(scope)
        if method in CHANGES and not same_site(headers, port, self._guard.host_allowed):
            await refuse(send, 403, "requests from another site are refused")
            return
        if method not in WITH_JSON_BODY:
            await self.app(scope, receive, send)
            return
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            await refuse(send, 415, "the body must be application/json")
            return
        await self._bounded_json(scope, receive, send)

    async def _bounded_json(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the (size-bounded) body within its deadline, check its shape, then hand the
        same bytes on. A body trickled a byte at a time held its connection for ever (the header
        deadline ends with the headers), so 256 of them locked every caller out: 408."""
        seconds = self.limits.body_timeout
        if seconds is None:
            seconds = self.limits.header_timeout
        try:
            body = await within(_read_body(receive), seconds)
        except (TimeoutError, asyncio.TimeoutError):  # one class on 3.11+, two on 3.10
            await refuse(send, 408, f"the body did not arrive within {seconds:g} s")
            return
        if body is None:
            return  # gone, or refused as too large by the guard (which answered)
        if body:
            refusal, value = await json_refusal(body, self.limits)
            if refusal is not None:
                await refuse(send, *refusal)
                return
            scope.setdefault("state", {})[PARSED] = value  # our own apps need not parse again
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body, or None when the client left (or the guard refused it)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _shape_refusal(body: bytes, limits: Limits) -> tuple[int, str] | None:
    # before parsing (a C-speed count; brackets inside strings count too, harmlessly)
    if body.count(b"[") + body.count(b"{") > limits.max_json_items:
        return 413, f"the body holds more than {limits.max_json_items} values"
    return None


def _value_refusal(value: Any, limits: Limits) -> tuple[int, str] | None:
    if count_items(value, limits.max_json_items):
        return 413, f"the body holds more than {limits.max_json_items} values"
    return None


async def json_refusal(body: bytes, limits: Limits) -> tuple[tuple[int, str] | None, Any]:
    """Why a (non-empty) JSON body is refused (status, message), or None, and its parsed value:
    too many values (413), too deep or not JSON (400). Large bodies are parsed off the event
    loop."""
    refusal = _shape_refusal(body, limits)
    if refusal is not None:
        return refusal, None
    try:
        value = await aparse_json(body, what="the body", max_depth=limits.max_json_depth)
    except UntrustedInputError as error:
        return (400, str(error)), None
    return _value_refusal(value, limits), value


def json_refusal_sync(body: bytes, limits: Limits) -> tuple[int, str] | None:
    """``json_refusal`` for a threaded (stdlib) server."""
    if not body:
        return None
    refusal = _shape_refusal(body, limits)
    if refusal is not None:
        return refusal
    try:
        value = parse_json(body, what="the body", max_depth=limits.max_json_depth)
    except UntrustedInputError as error:
        return 400, str(error)
    return _value_refusal(value, limits)


class HardenedHTTPServer(ThreadingHTTPServer):
    """The stdlib counterpart of ``hardened_server`` for the reference review server (a
    ``ThreadingHTTPServer``): at most ``limits.max_connections`` connections (the next one
    gets 503 and is closed), and a request's headers must be complete within
    ``limits.header_timeout`` seconds (else the connection is closed). Its handler must be a
    ``HeadDeadline``; ``surface`` must be declared."""

    daemon_threads = True
    limits = Limits()
    surface = ""

    def server_activate(self) -> None:
        if self.surface not in SURFACES:
            raise ValueError(f"undeclared surface {self.surface!r}: call declare_surface first")
        self._live = 0
        self._count = threading.Lock()
        super().server_activate()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._count:
            full = self._live >= self.limits.max_connections
            if not full:
                self._live += 1
        if full:
            with contextlib.suppress(OSError):
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n"
                    b"content-length: 0\r\n\r\n"
                )
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._count:
                self._live -= 1


class HeadDeadline(BaseHTTPRequestHandler):
    """A stdlib handler whose every request head must arrive within the server's
    ``limits.header_timeout`` seconds: a watchdog shuts the socket down otherwise (a socket
    timeout alone restarts with every byte a slowloris sends). Bodies are read with
    ``read_body``, under the same kind of watchdog."""

    server: HardenedHTTPServer

    def handle_one_request(self) -> None:
        timer = threading.Timer(self.server.limits.header_timeout, self._too_slow)
        timer.daemon = True
        self._head_timer = timer
        timer.start()
        try:
            super().handle_one_request()
        finally:
            timer.cancel()

    def parse_request(self) -> bool:
        # the stdlib reads the header lines inside ``parse_request``, after the request line:
        # the deadline holds until they are all in (cancelled before, a slowloris sending a
        # request line and then a header byte now and then was cut only by the socket timeout,
        # which restarts with every byte)
        try:
            return super().parse_request()
        finally:
            self._head_timer.cancel()  # the head is in: the deadline is met

    def _too_slow(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def read_body(self, size: int) -> bytes:
        """Up to ``size`` bytes of the request's body, which must arrive within the server's
        ``limits.body_timeout`` (None: ``header_timeout``); past it the socket is shut down and
        fewer bytes come back (a trickled body held its thread for ever: the socket timeout
        restarts with every byte)."""
        limits = self.server.limits
        seconds = limits.header_timeout if limits.body_timeout is None else limits.body_timeout
        timer = threading.Timer(seconds, self._too_slow)
        timer.daemon = True
        timer.start()
        try:
            chunks: list[bytes] = []
            left = size
            while left > 0:
                chunk = self.rfile.read(min(left, 65536))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        except OSError:
            return b"".join(chunks)
        finally:
            timer.cancel()


def hardened_surface(app: Any) -> str | None:
    """The surface ``app`` was hardened as (a ``Hardened``, or a Starlette app whose outermost
    middleware is ``Hardened``), or None."""
    if isinstance(app, Hardened):
        return app.surface
    middleware = getattr(app, "user_middleware", None) or []
    if middleware and getattr(middleware[0], "cls", None) is Hardened:
        return str(middleware[0].kwargs["surface"])
    return None


def _protocol(limits: Limits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the connection cap and the header deadline (SEAMS: it
    overrides ``connection_made``/``data_received``/``on_response_complete``/``connection_lost``
    and reads
    ``connections``, ``conn`` (its ``h11.Connection``: a head is timed only when h11 waits for
    a new request, never the rest of a body answered early), ``cycle``, ``transport``,
    ``loop``)."""
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    for name in ("connection_made", "data_received", "on_response_complete", "connection_lost"):
        if not callable(getattr(H11Protocol, name, None)):  # checked at start, not at attack
            raise RuntimeError(
                f"uvicorn {uvicorn.__version__}: H11Protocol.{name} is gone, so the header "
                "deadline cannot be enforced; pin uvicorn below this version (serve/_hardened.py)"
            )

    class Deadlined(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _tail = b""
        _head_bytes = 0
        _head = True

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            _no_delay(transport)
            if len(self.connections) > limits.max_connections:
                self._close(503, "Service Unavailable")
                return
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._timer is None and self.conn.their_state is h11.IDLE:
                self._arm()  # a new request's first bytes: its head is now timed
            if self._timer is not None and self._head:
                seen = self._tail + data
                end = seen.find(b"\r\n\r\n")
                self._head_bytes += len(data) if end < 0 else end + 4 - len(self._tail)
                if self._head_bytes > limits.max_header_bytes:
                    self._disarm()
                    self._close(431, "Request Header Fields Too Large")
                    return
                if end >= 0:
                    self._disarm()
                else:
                    self._tail = seen[-3:]
            super().data_received(data)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is not h11.IDLE:
                # answered before its body was read: the rest must arrive within the deadline
                # (every byte cancels uvicorn's keep-alive timer, so a trickle held it for ever)
                self._arm(head=False)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self, head: bool = True) -> None:
            self._disarm()
            self._head = head
            self._tail = b""
            self._head_bytes = 0
            self._timer = self.loop.call_later(limits.header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _too_slow(self) -> None:
            self._timer = None
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                return  # a request is being answered: its headers came in time
            self._close(408, "Request Timeout")

        def _close(self, status: int, phrase: str) -> None:
            if not self.transport.is_closing():
                self.transport.write(
                    f"HTTP/1.1 {status} {phrase}\r\nconnection: close\r\n"
                    "content-length: 0\r\n\r\n".encode()
                )
                self.transport.close()

    return Deadlined


def _no_delay(transport: Any) -> None:
    """Small writes (a streamed event, a response's last bytes) leave at once. asyncio sets
    TCP_NODELAY only on sockets it knows are TCP; a listening socket made as ``socket.socket()``
    (protocol 0) and handed to the server makes its connections wait up to 40 ms for the client's
    delayed ACK on every keep-alive answer."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def hardened_server(
    app: Any,
    *,
    host: str | None = None,
    port: int | None = None,
    limits: Limits | None = None,
    server_class: Any = None,
    **settings: Any,
) -> Any:
    """A ``uvicorn.Server`` (or ``server_class``, a subclass) for a hardened ``app``, with the
    connection bounds of ``limits`` (default: the app's own); ``settings`` go to
    ``uvicorn.Config`` (log level, lifespan, graceful shutdown). Raises ``TypeError`` for an app
    that did not go through ``Hardened``."""
    import uvicorn

    if hardened_surface(app) is None:
        raise TypeError("hardened_server serves only apps wrapped in Hardened (see _hardened.py)")
    if limits is None:
        limits = app.limits if isinstance(app, Hardened) else Limits()
    where: dict[str, Any] = {}
    if host is not None:
        where["host"] = host
    if port is not None:
        where["port"] = port
    config = uvicorn.Config(
        app,
        **where,
        http=_protocol(limits),
        limit_concurrency=limits.max_connections + 1,  # uvicorn counts the asking connection
        timeout_keep_alive=limits.keep_alive_seconds,
        h11_max_incomplete_event_size=limits.max_header_bytes,
        **settings,
    )
    return (server_class or uvicorn.Server)(config)


__all__ = [
    "PARSED",
    "SURFACES",
    "Hardened",
    "HardenedHTTPServer",
    "HeadDeadline",
    "Limits",
    "built",
    "count_items",
    "declare_surface",
    "hardened_server",
    "hardened_surface",
    "json_refusal",
    "json_refusal_sync",
    "same_site",
]
