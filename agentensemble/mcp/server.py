"""MCP servers as tool sources: put ``MCPServerStdio(...)`` or ``MCPServerHTTP(...)`` in an
agent's or a task's ``tools=[...]``.

Nothing starts at construction: the run starts (or connects to) each server once, before the
first model call, lists its tools, filters and names them (``include``/``exclude``, ``prefix``),
and closes it when the run ends. A server that cannot start fails the run with MCPServerError
naming the command or URL.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import IO, Any, Literal

from agentensemble._log_redaction import install_log_redaction
from agentensemble._naming import tool_name_problem
from agentensemble.errors import ConfigurationError
from agentensemble.mcp._connection import Connection, MCPServerError
from agentensemble.mcp._group import end_group, find_leader
from agentensemble.mcp.tool import (
    DEFAULT_MAX_OUTPUT_CHARS,
    MCPTool,
    exposed_name,
    object_schema,
)
from agentensemble.redaction import (
    redact_command,
    register_argument_secrets,
    register_header_secrets,
    register_secret,
    register_url_secrets,
    safe_url,
)
from agentensemble.tools.source import OpenedSource, ToolSource

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_STARTUP_TIMEOUT = 30.0


def _names(value: Sequence[str] | None, field: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise ConfigurationError(f"{field} must be a list of tool names, got {value!r}")
    return tuple(value)


def _positive(value: float, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigurationError(f"{field} must be a positive number of seconds, got {value!r}")
    return float(value)


class _MCPServer(ToolSource):
    """What both transports share: naming, filtering, approval, timeouts."""

    def __init__(
        self,
        *,
        prefix: str | None,
        include: Sequence[str] | None,
        exclude: Sequence[str] | None,
        requires_approval: bool | Sequence[str],
        timeout: float,
        startup_timeout: float,
        max_output_chars: int,
    ) -> None:
        if prefix is not None:
            problem = tool_name_problem(prefix)
            if problem:
                raise ConfigurationError(f"prefix: {problem}")
        self.prefix = prefix
        self.include = _names(include, "include")
        self.exclude = _names(exclude, "exclude")
        if isinstance(requires_approval, bool):
            self.requires_approval: bool | tuple[str, ...] = requires_approval
        else:
            self.requires_approval = _names(requires_approval, "requires_approval") or ()
        self.timeout = _positive(timeout, "timeout")
        self.startup_timeout = _positive(startup_timeout, "startup_timeout")
        if isinstance(max_output_chars, bool) or not isinstance(max_output_chars, int):
            raise ConfigurationError(f"max_output_chars must be an int, got {max_output_chars!r}")
        self.max_output_chars = max_output_chars

    def _transport(self, stderr: IO[bytes]) -> Any:
        raise NotImplementedError

    @property
    def asks_for_approval(self) -> bool:
        return bool(self.requires_approval)

    async def open(self) -> OpenedSource:
        """Start or connect, list the tools and make them AgentTools (once per run)."""
        try:
            import mcp  # noqa: F401
        except ImportError as error:
            raise MCPServerError(
                f"{self.describe()} needs the 'mcp' package: pip install \"agentensemble-py[mcp]\""
            ) from error
        connection = Connection(self.describe(), self._transport, self.timeout)
        listed = await connection.start(self.startup_timeout)
        try:
            connection.set_tools(self._tools_from(listed, connection))
        except BaseException:
            await connection.close()
            raise
        return connection

    def _tools_from(self, listed: Sequence[Any], connection: Connection) -> list[MCPTool]:
        names = [str(tool.name) for tool in listed]
        for field in ("include", "exclude", "requires_approval"):
            wanted = getattr(self, field)
            unknown = (
                [] if isinstance(wanted, bool) else [n for n in wanted or () if n not in names]
            )
            if unknown:
                raise MCPServerError(
                    f"{self.describe()}: {field} names tool(s) the server does not list: "
                    f"{', '.join(map(repr, unknown))} (it lists: {', '.join(names) or 'nothing'})"
                )
        tools: list[MCPTool] = []
        for remote in listed:
            name = str(remote.name)
            if self.include is not None and name not in self.include:
                continue
            if self.exclude is not None and name in self.exclude:
                continue
            approval = self.requires_approval
            tools.append(
                MCPTool(
                    name=exposed_name(name, self.prefix),
                    remote_name=name,
                    description=str(getattr(remote, "description", None) or ""),
                    input_schema=object_schema(getattr(remote, "input_schema", None)),
                    call=connection.call,
                    origin=f"tool '{name}' of {self.describe()}",
                    requires_approval=approval if isinstance(approval, bool) else name in approval,
                    max_output_chars=self.max_output_chars,
                )
            )
        return tools


class MCPServerStdio(_MCPServer):
    """An MCP server run as a subprocess speaking over stdin/stdout.

    ``env`` is added to a minimal safe environment (PATH, HOME, ...; the ``mcp`` package's
    default), so the parent's API keys do not leak to the server unless passed here. Every
    ``env`` value is registered as a secret, and so are credentials in the command line
    (``postgresql://app:pw@db``, ``--token=...``): the server's stderr, errors, logs and the
    model's text show them as ``***``. The
    server's stderr is kept and quoted when it fails; pass ``stderr=`` (a real file) to send
    it elsewhere. ``requires_approval``: True for every tool, or a list of the server's tool
    names.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        prefix: str | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        requires_approval: bool | Sequence[str] = False,
        *,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        stderr: IO[Any] | None = None,
    ) -> None:
        if not isinstance(command, str) or not command.strip():
            raise ConfigurationError(f"command must be a non-blank string, got {command!r}")
        if isinstance(args, str) or not all(isinstance(arg, str) for arg in args):
            raise ConfigurationError(f"args must be a list of strings, got {args!r}")
        if env is not None and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in dict(env).items()
        ):
            raise ConfigurationError("env must map strings to strings")
        super().__init__(
            prefix=prefix,
            include=include,
            exclude=exclude,
            requires_approval=requires_approval,
            timeout=timeout,
            startup_timeout=startup_timeout,
            max_output_chars=max_output_chars,
        )
        self.command = command
        self.args = list(args)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stderr = stderr
        for value in (self.env or {}).values():  # every value: the server's config is secret
            register_secret(value)
        register_argument_secrets([self.command, *self.args])  # postgresql://app:pw@db, --token=

    def describe(self) -> str:
        return f"MCP server {redact_command([self.command, *self.args])!r}"

    @asynccontextmanager
    async def _transport(self, stderr: IO[bytes]) -> AsyncIterator[Any]:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        parameters = StdioServerParameters(
            command=self.command,
            args=self.args,
            env=self.env,
            cwd=None if self.cwd is None else os.fspath(self.cwd),
        )
        errlog = self.stderr or stderr
        leader: int | None = None
        try:
            # errlog passed explicitly: the default was bound to sys.stderr at mcp's first import
            async with stdio_client(parameters, errlog=errlog) as streams:  # type: ignore[arg-type]
                leader = find_leader(errlog)
                yield streams
        finally:
            # the leader may have exited politely and left its children: end its whole group
            await asyncio.shield(asyncio.to_thread(end_group, leader))

    def __repr__(self) -> str:
        shown = [redact_command([arg]) for arg in self.args]
        return f"MCPServerStdio(command={redact_command([self.command])!r}, args={shown!r})"


class MCPServerHTTP(_MCPServer):
    """An MCP server reached over HTTP: streamable HTTP (the default) or the older SSE.

    ``headers`` (e.g. ``{"Authorization": "Bearer ..."}``) go with every request. Their values
    and the URL's credentials (user info, query values, token-like path segments, as hosted
    services issue them) are registered as secrets: redacted from the model's text, logs,
    trace and errors, where the URL is shown without its query and with tokens masked.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        prefix: str | None = None,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        requires_approval: bool | Sequence[str] = False,
        *,
        transport: Literal["streamable-http", "sse"] = "streamable-http",
        timeout: float = DEFAULT_CALL_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"url must start with http:// or https://, got {url!r}")
        if transport not in ("streamable-http", "sse"):
            raise ConfigurationError(
                f"transport must be 'streamable-http' or 'sse', got {transport!r}"
            )
        super().__init__(
            prefix=prefix,
            include=include,
            exclude=exclude,
            requires_approval=requires_approval,
            timeout=timeout,
            startup_timeout=startup_timeout,
            max_output_chars=max_output_chars,
        )
        self.url = url
        self.headers = dict(headers or {})
        self.transport = transport
        # hosted MCP services put the credential in the URL's path or query: registered, so
        # it is redacted wherever it shows up (httpx's own request log lines included)
        register_url_secrets(url)
        register_header_secrets(self.headers)
        install_log_redaction()

    def describe(self) -> str:
        return f"MCP server {safe_url(self.url)!r}"

    @asynccontextmanager
    async def _transport(self, stderr: IO[bytes]) -> AsyncIterator[Any]:
        if self.transport == "sse":
            from mcp.client.sse import sse_client

            async with sse_client(self.url, headers=self.headers, timeout=self.timeout) as streams:
                yield streams
            return
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(self.timeout, read=max(self.timeout, 300.0))
        async with (
            httpx2.AsyncClient(headers=self.headers, timeout=timeout) as client,
            streamable_http_client(self.url, http_client=client) as streams,
        ):
            yield streams

    def __repr__(self) -> str:
        return f"MCPServerHTTP(url={safe_url(self.url)!r})"


__all__ = ["MCPServerError", "MCPServerHTTP", "MCPServerStdio"]
