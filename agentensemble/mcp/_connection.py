"""One live connection to an MCP server, owned by a task of its own.

The ``mcp`` client is built on anyio task groups, which must be entered and left by the same
task. A run's tasks come and go, so one owner task enters the transport and the session, lists
the tools, then waits for ``close``; tool calls from any task (or any thread, through the
owner's loop) use the session meanwhile. ``close`` is bounded: the owner is told to stop, the
transport stops the server (stdin closed, then SIGTERM/SIGKILL to its process group), and if
that does not end in time the owner is cancelled.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import IO, Any, TypeVar

from agentensemble.errors import ConfigurationError, ToolExecutionError
from agentensemble.logging import get_logger
from agentensemble.mcp._requests import CallScope
from agentensemble.mcp._stderr import StderrCapture
from agentensemble.tools.source import OpenedSource

CLOSE_TIMEOUT = 10.0  # the stdio transport's own escalation takes at most ~7 s

_log = get_logger()

Transport = Callable[[IO[bytes]], AbstractAsyncContextManager[Any]]
T = TypeVar("T")
_SDK_STAND_IN = "MCPError: Server returned an error response"  # what the SDK says for a 4xx/5xx


class MCPServerError(ConfigurationError):
    """An MCP server could not be started, connected or listed: the run fails before the
    first model call, and the message names the command or URL (and the server's stderr).
    Also raised when a request for its resources or prompts fails, naming the request."""


def _leaves(error: BaseException) -> list[BaseException]:
    """The real errors inside (possibly nested) exception groups."""
    inner = getattr(error, "exceptions", None)  # BaseExceptionGroup (3.11+ or the backport)
    if isinstance(inner, tuple) and inner:
        return [leaf for item in inner if isinstance(item, BaseException) for leaf in _leaves(item)]
    return [error]


def describe_error(error: BaseException) -> str:
    """``Type: message`` for each real error (anyio wraps them in groups)."""
    texts = [f"{type(leaf).__name__}: {leaf}".rstrip(": ") for leaf in _leaves(error)]
    return "; ".join(dict.fromkeys(texts)) or type(error).__name__


class Connection(OpenedSource):
    """The open connection: its tools, ``call`` for them, and ``close``."""

    def __init__(
        self,
        label: str,
        transport: Transport,
        call_timeout: float,
        callbacks: Callable[[Connection], dict[str, Any]] | None = None,
        diagnose: Callable[[], str | None] | None = None,
    ) -> None:
        """``callbacks``: the session's sampling and elicitation callbacks for this connection
        (they find the call in progress through ``current_call``). ``diagnose``: why the last
        failure happened when the transport knows better than the SDK's error (HTTP 401)."""
        self.label = label
        self._callbacks = callbacks
        self._diagnose = diagnose
        self._calls: list[CallScope] = []
        self._transport = transport
        self._call_timeout = call_timeout
        self._stderr = StderrCapture(label)  # bounded: a server may write without end
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[list[Any]] | None = None
        self._stop = asyncio.Event()
        self._built_tools: list[Any] = []

    @property
    def tools(self) -> list[Any]:
        return self._built_tools

    def set_tools(self, tools: list[Any]) -> None:
        """The AgentTools made from the listing (the server object filters and names them)."""
        self._built_tools = tools

    # -- opening ---------------------------------------------------------------------------

    async def start(self, startup_timeout: float) -> list[Any]:
        """Start the owner task; return the server's tool listing or raise MCPServerError."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        ready: asyncio.Future[list[Any]] = loop.create_future()
        self._ready = ready
        self._owner = loop.create_task(self._own(ready), name=f"agentensemble {self.label}")
        try:
            return await asyncio.wait_for(asyncio.shield(ready), startup_timeout)
        except asyncio.TimeoutError:
            note = self.stderr_note()
            await self.close()
            raise MCPServerError(
                f"{self.label} did not start within {startup_timeout:g} s{note}"
            ) from None
        except BaseException:
            await self.close()
            raise

    async def _own(self, ready: asyncio.Future[list[Any]]) -> None:
        from agentensemble.mcp._session import CheckedSession  # the SDK: imported on connect

        try:
            async with (
                self._transport(self._stderr.writer) as streams,
                CheckedSession(
                    streams[0],
                    streams[1],
                    **(self._callbacks(self) if self._callbacks is not None else {}),
                ) as session,
            ):
                await session.initialize()
                listed = await _list_all(session)
                # the SDK would check results against the server's output schemas with
                # unbounded regexes, on this loop: the server's own pattern could freeze it
                session.check_results_of(listed)
                self._session = session
                if not ready.done():
                    ready.set_result(listed)
                await self._stop.wait()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(
                    MCPServerError(
                        f"{self.label} could not start: {self.why(error)}" + self.stderr_note()
                    )
                )
            elif not isinstance(error, asyncio.CancelledError):
                _log.warning(
                    "MCP connection ended with an error", server=self.label, error=str(error)
                )
            if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._session = None

    # -- calling ---------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any], timeout: float | None = None) -> Any:
        """Call one tool; a dead or closed server raises ToolExecutionError saying so. The
        caller's context is kept for the call: a sampling or elicitation request the server
        makes meanwhile is answered in it (the run's review handler, limits and events).
        ``timeout``: how long the SDK waits for the answer (None: the server's ``timeout``);
        the tool's policy times the call itself, this is its backstop."""
        scope = CallScope(contextvars.copy_context())
        loop = self._loop
        if loop is None or loop.is_closed():
            raise ToolExecutionError(f"{self.label} is not running")
        if asyncio.get_running_loop() is not loop:  # a nested run's loop, or a sync bridge
            future = asyncio.run_coroutine_threadsafe(
                self._call(name, arguments, scope, timeout), loop
            )
            return await asyncio.wrap_future(future)
        return await self._call(name, arguments, scope, timeout)

    async def _call(
        self, name: str, arguments: dict[str, Any], scope: CallScope, timeout: float | None
    ) -> Any:
        session = self._session
        if session is None:
            raise ToolExecutionError(f"{self.label} is not running{self.stderr_note()}")
        self._calls.append(scope)
        try:
            waited = self._call_timeout if timeout is None else timeout
            return await session.call_tool(name, arguments, read_timeout_seconds=waited)
        except Exception as error:
            raise ToolExecutionError(
                f"{self.label} failed to answer the call to '{name}': "
                f"{self.why(error)}{self.stderr_note()}"
            ) from error
        finally:
            self._calls.remove(scope)

    def why(self, error: BaseException) -> str:
        """The error, led by the transport's diagnosis when it has one (``HTTP 401
        Unauthorized: ...``); the SDK's stand-in for an HTTP error status says nothing more."""
        described = describe_error(error)
        found = self._diagnose() if self._diagnose is not None else None
        if not found:
            return described
        return found if described == _SDK_STAND_IN else f"{found}; {described}"

    def current_call(self) -> CallScope | None:
        """The most recent tool call still in progress (a server's request belongs to it)."""
        return self._calls[-1] if self._calls else None

    async def request(self, what: str, send: Callable[[Any], Awaitable[T]]) -> T:
        """Send one request (``send(session)``: a listing, a read) with the call timeout;
        MCPServerError naming ``what`` when it fails or the server is gone."""
        loop = self._loop
        if loop is None or loop.is_closed() or self._session is None:
            raise MCPServerError(f"{self.label} is not running{self.stderr_note()}")
        if asyncio.get_running_loop() is not loop:
            future = asyncio.run_coroutine_threadsafe(self._request(what, send), loop)
            return await asyncio.wrap_future(future)
        return await self._request(what, send)

    async def _request(self, what: str, send: Callable[[Any], Awaitable[T]]) -> T:
        session = self._session
        if session is None:
            raise MCPServerError(f"{self.label} is not running{self.stderr_note()}")
        try:
            return await asyncio.wait_for(send(session), self._call_timeout)
        except asyncio.TimeoutError:
            raise MCPServerError(
                f"{self.label} did not answer {what} within {self._call_timeout:g} s"
            ) from None
        except Exception as error:
            raise MCPServerError(
                f"{self.label} failed to answer {what}: {self.why(error)}"
            ) from error

    # -- closing ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop the server and wait (bounded) for it; never raises."""
        owner = self._owner
        self._stop.set()
        if owner is not None and not owner.done():
            if self._session is None:  # still starting (a hung handshake): stop waiting for it
                owner.cancel()
            # a cancelled run still ends here: the owner, told to stop, stops the server itself
            done, _ = await asyncio.wait({owner}, timeout=CLOSE_TIMEOUT)
            if not done:
                _log.warning("MCP server did not stop in time; cancelling", server=self.label)
                owner.cancel()
                await asyncio.wait({owner}, timeout=CLOSE_TIMEOUT)
        for future in (owner, self._ready):  # retrieved: any error here was reported already
            if future is not None and future.done() and not future.cancelled():
                future.exception()
        self._stderr.close()

    def stderr_note(self) -> str:
        """``. Its stderr ends with: ...`` (its last 2 kB, and first 1 kB if it wrote more), or
        "" when it wrote nothing."""
        return self._stderr.note()


MAX_LISTED_TOOLS = 10_000
"""Tools read from a server's listing, at most (before ``include`` picks the ones to use)."""


async def _list_all(session: Any) -> list[Any]:
    """Every tool the server lists, following pagination (bounded to 100 pages and
    ``MAX_LISTED_TOOLS`` tools: past them, the listing is refused)."""
    from mcp_types import PaginatedRequestParams

    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        if len(tools) > MAX_LISTED_TOOLS:
            raise MCPServerError(
                f"the server lists over {MAX_LISTED_TOOLS} tools; that listing is not read"
            )
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


__all__ = ["Connection", "MCPServerError", "describe_error"]
