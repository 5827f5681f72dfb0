"""``WebConsoleServer``: the console served by uvicorn, in a thread or in the foreground.

``agentensemble serve`` runs it until Ctrl-C; tests and examples use
``with WebConsoleServer(port=0) as console: ...`` and give ``console.url`` and ``console.token``
to ``WebConsole`` / ``WebReviewHandler``. It binds 127.0.0.1 unless told otherwise; the login
address (``login_url``, with the token, like Jupyter's) is for the reviewer only.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import threading
import urllib.parse
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from types import TracebackType

import uvicorn

from agentensemble.redaction import register_secret
from agentensemble.serve._hardened import hardened_server
from agentensemble_review._server_guard import is_loopback
from agentensemble_web.app import LIMITS, ConsoleState, create_app
from agentensemble_web.store import DEFAULT_KEEP_DAYS, DEFAULT_KEEP_RUNS, MEMORY, Store

DEFAULT_PORT = 8766


class _Server(uvicorn.Server):
    """uvicorn, ending the live streams and long polls first when asked to stop (Ctrl-C), so
    stopping with pages open is immediate and prints no traceback."""

    def __init__(self, config: uvicorn.Config, state: ConsoleState) -> None:
        super().__init__(config)
        self._console = state

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._console.stop()
        await super().shutdown(sockets)


class WebConsoleServer:
    """The web console. ``port=0`` picks a free port; ``token`` defaults to a random one;
    ``db`` is the SQLite file or ``postgresql://`` URL keeping runs, reviews and sessions across
    restarts (None: kept in memory only), with retention by age (``keep_days``) and count
    (``keep_runs``)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        token: str | None = None,
        allowed_hosts: Iterable[str] = (),
        db: str | Path | None = None,
        keep_days: float = DEFAULT_KEEP_DAYS,
        keep_runs: int = DEFAULT_KEEP_RUNS,
    ) -> None:
        self.host = host
        self.db = str(db) if db is not None else MEMORY
        self._keep = (keep_days, keep_runs)
        self.port = port
        self.token = token or secrets.token_urlsafe(24)
        register_secret(self.token)
        self._allowed_hosts = tuple(allowed_hosts)
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._state: ConsoleState | None = None

    def __repr__(self) -> str:
        return f"WebConsoleServer(host={self.host!r}, port={self.port}, token='***')"

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:8766`` (the real port once bound)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def login_url(self) -> str:
        """The address that logs a browser in (it carries the token: give it to reviewers only)."""
        return f"{self.url}/login?token={urllib.parse.quote(self.token, safe='')}"

    @property
    def is_public(self) -> bool:
        """Whether the bound address can be reached from other machines."""
        return not is_loopback(self.host.strip("[]"))

    @property
    def state(self) -> ConsoleState:
        """What the console holds (runs, reviews); only touch it on the server's loop."""
        if self._state is None:
            raise RuntimeError("the console is not started")
        return self._state

    def bind(self) -> None:
        """Open the listening socket, so ``port`` is known before serving."""
        if self._socket is None:
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # accepted connections inherit it: a response's headers and body leave at once
            # instead of the body waiting ~40 ms for the browser's delayed ACK (Nagle)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((self.host.strip("[]"), self.port))
            sock.listen(128)
            self.port = sock.getsockname()[1]
            self._socket = sock

    def _make_server(self) -> uvicorn.Server:
        self.bind()
        store = Store(self.db, keep_days=self._keep[0], keep_runs=self._keep[1])
        app = create_app(self.token, self.host, self.port, self._allowed_hosts, store)
        self._state = app.state.console
        state = app.state.console

        class Server(_Server):
            def __init__(self, config: uvicorn.Config) -> None:
                super().__init__(config, state)

        return hardened_server(  # type: ignore[no-any-return]
            app,
            limits=replace(LIMITS, keep_alive_seconds=30),
            server_class=Server,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws="none",
            timeout_graceful_shutdown=2,
        )

    async def _serve(self, server: uvicorn.Server) -> None:
        self._loop = asyncio.get_running_loop()
        assert self._socket is not None
        try:
            await server.serve(sockets=[self._socket])
        finally:
            if self._state is not None:
                self._state.store.close()

    def start(self, timeout: float = 10.0) -> WebConsoleServer:
        """Serve in a daemon thread; returns once the server accepts connections."""
        if self._thread is not None:
            return self
        server = self._server = self._make_server()
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._serve(server),), name="agentensemble-web", daemon=True
        )
        self._thread.start()
        for _ in range(int(timeout / 0.02)):
            if server.started:
                return self
            if not self._thread.is_alive():
                break
            threading.Event().wait(0.02)
        self.stop()
        raise RuntimeError(f"the web console did not start on {self.url}")

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (the command line's way)."""
        server = self._server = self._make_server()
        asyncio.run(self._serve(server))

    def stop(self) -> None:
        """Stop serving: end the live streams, then the server; close the socket."""
        server, loop, thread = self._server, self._loop, self._thread
        self._server = self._thread = self._loop = None
        if server is not None:
            if loop is not None and self._state is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop may just have finished
                    loop.call_soon_threadsafe(self._state.stop)
            server.should_exit = True
        if thread is not None:
            thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> WebConsoleServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = ["DEFAULT_PORT", "WebConsoleServer"]
