"""MCP servers as tool sources: put ``MCPServerStdio(...)`` or ``MCPServerHTTP(...)`` in an
agent's or a task's ``tools=[...]``.

Nothing starts at construction: the run starts (or connects to) each server once, before the
first model call, lists its tools, filters and names them (``include``/``exclude``, ``prefix``),
and closes it when the run ends. A server that cannot start fails the run with MCPServerError
naming the command or URL.

This module owns the servers as tool sources: their settings, checked; starting or connecting
(the two transports); and the tools they list, filtered, named and given their policies. Beyond
tools, ``list_resources``, ``read_resource``, ``list_prompts`` and ``get_prompt`` (and ``async
with server:``) come from ``_resources_and_prompts.py``. A server may ask our model
(``sampling=True``) or the user (elicitation) while one of its tools runs: each request goes to
the run's review handler (``_requests.py``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import IO, Any, Literal

from pydantic import ValidationError

from agentensemble._base.log_redaction import install_log_redaction
from agentensemble._base.naming import tool_name_problem
from agentensemble._base.validation import check_model
from agentensemble.errors import ConfigurationError
from agentensemble.mcp._connection import Connection, MCPServerError, Transport
from agentensemble.mcp._content import DEFAULT_MAX_RESOURCE_BYTES
from agentensemble.mcp._group import end_group, find_leader
from agentensemble.mcp._requests import (
    DEFAULT_MAX_SAMPLES_PER_CALL,
    DEFAULT_MAX_SAMPLING_TOKENS,
    ServerRequests,
)
from agentensemble.mcp._resources_and_prompts import ResourcesAndPrompts
from agentensemble.mcp.tool import (
    DEFAULT_MAX_OUTPUT_CHARS,
    MAX_SCHEMA_CHARS,
    MAX_TOOLS,
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
from agentensemble.tools._calls import OWN_DEADLINE_GRACE
from agentensemble.tools.policy import ToolPolicy, layered
from agentensemble.tools.schema import format_validation_error
from agentensemble.tools.source import OpenedSource

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


def _count(value: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigurationError(f"{field} must be a positive int, got {value!r}")
    return value


def _policy(value: object, field: str) -> ToolPolicy | None:
    """A ToolPolicy from ``value`` (one, or its settings as a mapping), naming ``field``."""
    if value is None or isinstance(value, ToolPolicy):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{field} must be a ToolPolicy (or a mapping of its settings), "
            f"got {type(value).__name__}"
        )
    try:
        return ToolPolicy(**{str(key): item for key, item in value.items()})
    except ValidationError as error:
        shown = format_validation_error(error).replace("Value error, ", "")
        raise ConfigurationError(f"{field}: {shown}") from None


def _sampling_model(sampling: bool, model: Any) -> Any:
    if not isinstance(sampling, bool):
        raise ConfigurationError(f"sampling must be True or False, got {sampling!r}")
    try:
        return check_model(model)
    except ValueError as error:
        raise ConfigurationError(f"sampling_model: {error}") from None


def check_auth(auth: object) -> str | Any | None:
    """``auth`` if it is a bearer token (registered as a secret) or an ``httpx2.Auth``."""
    if auth is None:
        return None
    if isinstance(auth, str):
        token = auth.strip()
        if token.lower().startswith("bearer "):
            token = token[7:].strip()
        if not token or any(ch.isspace() for ch in token):
            raise ConfigurationError(
                "auth must be a bearer token (one word, with or without 'Bearer '), "
                "an httpx2.Auth or None; got a blank or spaced text"
            )
        register_secret(token)
        return token
    httpx2 = sys.modules.get("httpx2")  # an httpx2.Auth exists only once httpx2 is imported
    if httpx2 is not None and isinstance(auth, httpx2.Auth):
        return auth
    httpx = sys.modules.get("httpx")
    if httpx is not None and isinstance(auth, httpx.Auth):
        raise ConfigurationError(
            "auth is an httpx.Auth, but the mcp client speaks httpx2: pass an httpx2.Auth "
            "(mcp.client.auth.OAuthClientProvider is one) or a bearer token"
        )
    raise ConfigurationError(
        f"auth must be a bearer token (text), an httpx2.Auth or None, got {type(auth).__name__}"
    )


class _MCPServer(ResourcesAndPrompts):
    """What both transports share: naming, filtering, approval, timeouts; resources and
    prompts come with ``ResourcesAndPrompts``."""

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
        sampling: bool = False,
        sampling_model: Any = None,
        max_sampling_tokens: int = DEFAULT_MAX_SAMPLING_TOKENS,
        max_samples_per_call: int = DEFAULT_MAX_SAMPLES_PER_CALL,
        max_resource_bytes: int = DEFAULT_MAX_RESOURCE_BYTES,
        tool_policy: ToolPolicy | Mapping[str, Any] | None = None,
        tool_policies: Mapping[str, ToolPolicy | Mapping[str, Any]] | None = None,
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
        self.sampling_model = _sampling_model(sampling, sampling_model)
        self.sampling = sampling
        self.max_sampling_tokens = _count(max_sampling_tokens, "max_sampling_tokens")
        self.max_samples_per_call = _count(max_samples_per_call, "max_samples_per_call")
        self.max_resource_bytes = _count(max_resource_bytes, "max_resource_bytes")
        self.tool_policy = _policy(tool_policy, "tool_policy")
        if tool_policies is not None and not isinstance(tool_policies, Mapping):
            raise ConfigurationError(
                "tool_policies must map the server's tool names to ToolPolicy settings, "
                f"got {type(tool_policies).__name__}"
            )
        self.tool_policies: dict[str, ToolPolicy] = {
            str(name): _policy(policy, f"tool_policies[{name!r}]") or ToolPolicy()
            for name, policy in (tool_policies or {}).items()
        }
        self._held: Connection | None = None

    def policy_of(self, name: str) -> ToolPolicy:
        """The settings of the server's tool ``name``: its ``tool_policies`` entry over
        ``tool_policy``, setting by setting; the timeout, when neither sets one, the
        server's ``timeout`` (an MCP call always has a deadline)."""
        chosen = layered(self.tool_policies.get(name), self.tool_policy)
        if chosen is None:
            return ToolPolicy(timeout=self.timeout)
        if chosen.timeout is None:
            return chosen.model_copy(update={"timeout": self.timeout})
        return chosen

    def _transport(self, stderr: IO[bytes]) -> Any:
        raise NotImplementedError

    def _connection_parts(self) -> tuple[Transport, Callable[[], str | None] | None]:
        """The transport of one connection, and what can tell why a request to it failed."""
        return self._transport, None

    def _callbacks(self, connection: Connection) -> dict[str, Any]:
        return ServerRequests(
            self.describe(),
            sampling=self.sampling,
            sampling_model=self.sampling_model,
            max_sampling_tokens=self.max_sampling_tokens,
            max_samples_per_call=self.max_samples_per_call,
            current_call=connection.current_call,
        ).callbacks()

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
        transport, diagnose = self._connection_parts()
        connection = Connection(
            self.describe(), transport, self.timeout, callbacks=self._callbacks, diagnose=diagnose
        )
        listed = await connection.start(self.startup_timeout)
        try:
            connection.set_tools(self._tools_from(listed, connection))
        except BaseException:
            await connection.close()
            raise
        return connection

    def _tools_from(self, listed: Sequence[Any], connection: Connection) -> list[MCPTool]:
        names = [str(tool.name) for tool in listed]
        for field in ("include", "exclude", "requires_approval", "tool_policies"):
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
            schema = object_schema(getattr(remote, "input_schema", None))
            size = len(json.dumps(schema, ensure_ascii=False, default=str))
            if size > MAX_SCHEMA_CHARS:  # it would ride along in every request to the model
                raise MCPServerError(
                    f"{self.describe()}: tool {name!r} has an input schema of {size} characters; "
                    f"at most {MAX_SCHEMA_CHARS} are sent to a model (leave it out with "
                    f"exclude=[{name!r}])"
                )
            approval = self.requires_approval
            policy = self.policy_of(name)
            # the policy times each call (its message, event and retries); the SDK's own wait
            # for the answer comes a little later, a backstop
            waited = (policy.timeout or self.timeout) + OWN_DEADLINE_GRACE
            tools.append(
                MCPTool(
                    name=exposed_name(name, self.prefix),
                    remote_name=name,
                    description=str(getattr(remote, "description", None) or ""),
                    input_schema=schema,
                    call=functools.partial(connection.call, timeout=waited),
                    origin=f"tool '{name}' of {self.describe()}",
                    requires_approval=approval if isinstance(approval, bool) else name in approval,
                    max_output_chars=self.max_output_chars,
                    policy=policy,
                )
            )
        if len(tools) > MAX_TOOLS:  # every tool's spec is in every request to the model
            raise MCPServerError(
                f"{self.describe()} lists {len(tools)} tools; at most {MAX_TOOLS} are given to "
                "an agent: name the ones it needs with include=[...]"
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
        sampling: bool = False,
        sampling_model: Any = None,
        max_sampling_tokens: int = DEFAULT_MAX_SAMPLING_TOKENS,
        max_samples_per_call: int = DEFAULT_MAX_SAMPLES_PER_CALL,
        max_resource_bytes: int = DEFAULT_MAX_RESOURCE_BYTES,
        tool_policy: ToolPolicy | Mapping[str, Any] | None = None,
        tool_policies: Mapping[str, ToolPolicy | Mapping[str, Any]] | None = None,
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
            sampling=sampling,
            sampling_model=sampling_model,
            max_sampling_tokens=max_sampling_tokens,
            max_samples_per_call=max_samples_per_call,
            max_resource_bytes=max_resource_bytes,
            tool_policy=tool_policy,
            tool_policies=tool_policies,
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

    def _connection_parts(self) -> tuple[Transport, Callable[[], str | None] | None]:
        """Each connection reads the server's output in bounded lines (``_stdio_lines``): a
        message past the bound closes it, and becomes the reason its calls failed."""
        from agentensemble.mcp import _stdio_lines

        bound = _stdio_lines.LineBound(_stdio_lines.MAX_LINE_CHARS)
        return functools.partial(self._transport, bound=bound), bound.note

    @asynccontextmanager
    async def _transport(self, stderr: IO[bytes], bound: Any = None) -> AsyncIterator[Any]:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        from agentensemble.mcp._stdio_lines import MAX_LINE_CHARS, LineBound, reading_lines

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
            with reading_lines(bound or LineBound(MAX_LINE_CHARS)):  # the SDK's reader inherits it
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

    ``auth``: a bearer token (text) or any ``httpx2.Auth`` — the ``mcp`` package's
    ``OAuthClientProvider`` for servers that use the MCP authorization flow. The token, and
    every credential an auth flow obtains, is registered as a secret as it passes.
    ``headers`` (e.g. ``{"X-Team": "data"}``) go with every request. Their values
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
        auth: str | Any | None = None,
        timeout: float = DEFAULT_CALL_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        sampling: bool = False,
        sampling_model: Any = None,
        max_sampling_tokens: int = DEFAULT_MAX_SAMPLING_TOKENS,
        max_samples_per_call: int = DEFAULT_MAX_SAMPLES_PER_CALL,
        max_resource_bytes: int = DEFAULT_MAX_RESOURCE_BYTES,
        tool_policy: ToolPolicy | Mapping[str, Any] | None = None,
        tool_policies: Mapping[str, ToolPolicy | Mapping[str, Any]] | None = None,
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
            sampling=sampling,
            sampling_model=sampling_model,
            max_sampling_tokens=max_sampling_tokens,
            max_samples_per_call=max_samples_per_call,
            max_resource_bytes=max_resource_bytes,
            tool_policy=tool_policy,
            tool_policies=tool_policies,
        )
        self.url = url
        self.headers = dict(headers or {})
        self.transport = transport
        self.auth = check_auth(auth)
        # hosted MCP services put the credential in the URL's path or query: registered, so
        # it is redacted wherever it shows up (httpx's own request log lines included)
        register_url_secrets(url)
        register_header_secrets(self.headers)
        install_log_redaction()

    def describe(self) -> str:
        return f"MCP server {safe_url(self.url)!r}"

    def _connection_parts(self) -> tuple[Transport, Callable[[], str | None] | None]:
        """Each connection's transport watches the endpoint's status: a 401 or 403 becomes
        the reason a start or a call failed."""
        from agentensemble.mcp._auth import StatusWatch

        watch = StatusWatch(self.url)
        return functools.partial(self._transport, watch=watch), watch.refusal

    @asynccontextmanager
    async def _transport(self, stderr: IO[bytes], watch: Any = None) -> AsyncIterator[Any]:
        from agentensemble.mcp._auth import http_auth

        auth = http_auth(self.auth)
        if self.transport == "sse":
            from mcp.client.sse import sse_client

            async with sse_client(
                self.url, headers=self.headers, timeout=self.timeout, auth=auth
            ) as streams:
                yield streams
            return
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # a read may wait as long as the longest tool call may take
        longest = max(
            (p.timeout or 0.0 for p in (self.tool_policy, *self.tool_policies.values()) if p),
            default=0.0,
        )
        timeout = httpx2.Timeout(self.timeout, read=max(self.timeout, longest, 300.0))
        from agentensemble.mcp._http_limits import bound_answers

        # a JSON answer is read whole by the SDK: bounded by a hook (a transport of ours would
        # make httpx2 ignore the environment's proxy settings)
        hooks = {"response": [bound_answers, *([watch.see] if watch is not None else [])]}

        async with (
            httpx2.AsyncClient(
                headers=self.headers,
                timeout=timeout,
                auth=auth,
                event_hooks=hooks,
            ) as client,
            streamable_http_client(self.url, http_client=client) as streams,
        ):
            yield streams

    def __repr__(self) -> str:
        return f"MCPServerHTTP(url={safe_url(self.url)!r})"


__all__ = ["MCPServerError", "MCPServerHTTP", "MCPServerStdio"]
