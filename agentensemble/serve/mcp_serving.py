"""``mcp_server``: ensembles as the tools of an MCP server (the ``mcp`` package's own ``Server``).

One tool per ensemble. A call checks its arguments before anything runs, builds a fresh ensemble
when given a factory, runs it with a listener that turns task events into progress
notifications, and answers with the final output (and ``structuredContent`` when the last task
is typed). A failure is a tool result with ``isError`` and the redacted error text; a client's
cancellation cancels the run (the SDK cancels the handler's task). Calls run concurrently.
An ensemble with a memory store takes an optional ``session`` argument: the conversation the
call continues, the caller's own (``_sessions``: its identity is part of the session).

``mcp_http_app`` serves it over streamable HTTP through the one hardened setup
(``_hardened.Hardened``), with sessions owned and bounded: a session is its opener's (another
caller gets 404), at most ``max_sessions`` open, at most ``max_sessions_per_caller`` for one
caller (429 past it), each closed after ``idle_seconds`` without a request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

from agentensemble._run import check_setup, execute
from agentensemble.ensemble import Ensemble
from agentensemble.errors import ConfigurationError
from agentensemble.logging import redact, redact_text
from agentensemble.serve._durable_serving import check_registered, run_durably
from agentensemble.serve._hardened import Hardened, Limits, declare_surface
from agentensemble.serve._http_guard import (
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    allowed_host_names,
    refuse,
)
from agentensemble.serve._mcp_rounds import ServedRun
from agentensemble.serve._progress import ProgressPump
from agentensemble.serve._sessions import (
    LOCAL_CALLER,
    SESSION_ARGUMENT,
    caller_session,
    session_schema,
    takes_session,
)
from agentensemble.serve._shape import (
    BadArguments,
    EnsembleSource,
    check_arguments,
    check_name,
    description,
    ensemble_of,
    error_text,
    input_kinds,
    input_schema,
    output_schema,
    stopped,
    structured_result,
)
from agentensemble.serve.mcp_review import current_call


@dataclass(frozen=True)
class _Served:
    name: str
    source: EnsembleSource
    variables: dict[str, str]  # each input's kind (``input_kinds``)
    tool: types.Tool
    sessions: bool = False  # takes an optional ``session`` argument (``_sessions``)


def _describe(name: str, source: EnsembleSource, durable: Any = None) -> _Served:
    check_name(name)
    try:
        ensemble = ensemble_of(source)
        # refused setups fail here, at start, not at the first call: gated tools or reviews
        # with no review handler (an ensemble changed after it was built is checked again)
        check_setup(ensemble)
    except ConfigurationError as error:
        raise ConfigurationError(f"cannot serve {name!r}: {error}") from error
    variables = input_kinds(ensemble)
    schema = input_schema(ensemble)
    sessions = takes_session(ensemble, variables, durable)
    if sessions:  # optional: not in "required"
        schema["properties"][SESSION_ARGUMENT] = session_schema()
    tool = types.Tool(
        name=name,
        description=description(ensemble),
        input_schema=schema,
        output_schema=output_schema(ensemble),
    )
    return _Served(name, source, variables, tool, sessions)


def _texts_redacted(value: Any) -> Any:
    """A JSON schema with every text passing the redaction policy (its keys as they are: an
    input named ``token`` keeps its name)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {key: _texts_redacted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_texts_redacted(item) for item in value]
    return value


def _shown(tool: types.Tool) -> types.Tool:
    """A tool as listed: its description and schemas pass the redaction policy at each listing
    (a registered secret in a task's description or expected output reached every client)."""
    return tool.model_copy(
        update={
            "description": redact_text(tool.description or ""),
            "input_schema": _texts_redacted(tool.input_schema),
            "output_schema": _texts_redacted(tool.output_schema),
        }
    )


def _caller(ctx: ServerRequestContext[Any]) -> str:
    """Who calls: over HTTP the name the hardened guard gave the request (its token's name,
    else its address), over stdio (no HTTP request) the one local client."""
    request = ctx.request
    if request is None:
        return LOCAL_CALLER
    named = getattr(request, "scope", {}).get("state", {}).get("caller")
    if named:
        return str(named)
    client = getattr(request, "client", None)
    return f"address:{client.host if client is not None else ''}"


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


@dataclass
class _Shares:
    """How many runs each caller has going (a parked one too), at most ``most`` each."""

    most: int
    running: dict[str, int] = field(default_factory=dict)

    def refusal(self, caller: str) -> str | None:
        if self.running.get(caller, 0) >= self.most:
            return f"you already run {self.most} calls: wait for one to finish or cancel one"
        return None

    def take(self, caller: str) -> Callable[[Any], None]:
        """Count a run for ``caller``; the callback given back (to its task) ends it."""
        self.running[caller] = self.running.get(caller, 0) + 1

        def ended(_: Any) -> None:
            left = self.running.pop(caller, 1) - 1
            if left:
                self.running[caller] = left

        return ended


async def _start(
    served: _Served,
    ctx: ServerRequestContext[Any],
    arguments: Any,
    parked: dict[str, ServedRun],
    durable: Any = None,
    shares: _Shares | None = None,
) -> Any:
    """A new call: arguments checked and the ensemble built before anything runs; a caller
    past its share of running calls is refused (checked and counted with no await between)."""
    caller = _caller(ctx)
    if shares is not None and (refusal := shares.refusal(caller)) is not None:
        return _error_result(f"{served.name}: {refusal}")
    try:
        given = dict(arguments or {})
        asked = given.pop(SESSION_ARGUMENT, None) if served.sessions else None
        inputs = check_arguments(served.variables, given)
        session = caller_session(caller, asked)
        ensemble = ensemble_of(served.source)
    except BadArguments as error:
        return _error_result(f"{served.name}: {error}")
    except Exception as error:
        return _error_result(f"{served.name}: the ensemble could not be built: {error_text(error)}")
    run = ServedRun(ctx.session, ctx.request_id, parked, caller)

    async def report(progress: float, total: float | None, message: str) -> None:
        await run.session.report_progress(progress, total, message)

    async def work() -> types.CallToolResult:
        current_call.set(run.call)  # this task's own context: the review handler reads it
        pump = ProgressPump(report)
        try:
            if durable is None:
                output = await execute(ensemble, inputs, [pump], session=session)
            else:
                output = await run_durably(durable, served.name, inputs, pump)
        except Exception as error:
            await pump.close()
            return _error_result(f"{served.name} failed: {error_text(error)}")
        except BaseException:  # cancelled by the client (or the server shutting down)
            pump.abandon()
            raise
        await pump.close()
        why = stopped(output)
        if why is not None:
            return _error_result(f"{served.name}: {why}")
        structured = structured_result(ensemble, output)
        return types.CallToolResult(
            content=[types.TextContent(text=redact_text(output.raw))],
            structured_content=redact(structured) if structured is not None else None,
        )

    return await run.start(work, ended=shares.take(caller) if shares is not None else None)


def mcp_server(
    ensembles: Mapping[str, Ensemble | Any],
    name: str = "agentensemble",
    *,
    durable: Any = None,
    max_running_per_caller: int = 8,
) -> Server[Any]:
    """An MCP server (``mcp.server.Server``) with one tool per ensemble, named by its key.

    A value is an ``Ensemble`` or a zero-argument factory returning one (called once here to
    describe the tool and check it, then once per call, so every call is a fresh run). Raises
    ``ConfigurationError`` for a bad name or a setup that must not be served (a gated tool or
    a review with no review handler): the server refuses to start rather than run unreviewed.
    Serve it over stdio (``server.run(...)``) or streamable HTTP (``streamable_http_app()``),
    or use ``agentensemble serve-mcp``.

    ``durable``: a launched ``DurableRuntime`` in which every key is registered (with the same
    ensemble or factory); each call is then a durable run of it (docs/durable.md).

    ``max_running_per_caller``: the runs one caller (its token's name, else its address; over
    stdio the one local client) has going at once, a run waiting for its client's answer too;
    a call past it is an ``isError`` result before anything runs.
    """
    if max_running_per_caller < 1:
        raise ConfigurationError("mcp_server max_running_per_caller must be at least 1")
    if not isinstance(ensembles, Mapping) or not ensembles:
        raise ConfigurationError(
            'mcp_server needs a mapping of tool names to ensembles: {"name": ensemble}'
        )
    served = {key: _describe(key, source, durable) for key, source in ensembles.items()}
    if durable is not None:
        check_registered(durable, served)
    tools = [entry.tool for entry in served.values()]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_shown(tool) for tool in tools])

    parked: dict[str, ServedRun] = {}  # runs waiting for their client's answer (2026-07-28)
    shares = _Shares(max_running_per_caller)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        entry = served.get(params.name)
        if entry is None:
            known = ", ".join(served)
            return _error_result(f"unknown tool {params.name[:80]!r}; this server has: {known}")
        if params.request_state is not None:  # the client answers a question of a parked run
            run = parked.get(params.request_state)
            if run is None or run.call.caller != _caller(ctx):  # another's: as if unknown
                return _error_result(f"{entry.name}: unknown or expired request_state")
            del parked[params.request_state]
            result: Any = await run.resume(ctx.session, params.input_responses)
        else:
            result = await _start(entry, ctx, params.arguments, parked, durable, shares)
        return result  # type: ignore[no-any-return]

    def input_schema_of(tool: str) -> Mapping[str, Any] | None:
        # given to the SDK, it checks a call's ``Mcp-Param-*`` headers against this schema;
        # without it the SDK ran a whole ``tools/list`` dispatch inside every HTTP tool call
        entry = served.get(tool)
        return entry.tool.input_schema if entry is not None else None

    from agentensemble import __version__

    return Server(
        name,
        version=__version__,
        instructions="Each tool runs a team of agents (agentensemble) and returns its result.",
        get_tool_input_schema=input_schema_of,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


SURFACE = declare_surface("mcp-http", "ensembles as MCP tools over streamable HTTP (serve-mcp)")
SESSION_HEADER = "mcp-session-id"


@dataclass(frozen=True)
class SessionLimits:
    """How many MCP sessions stay open, and for how long without a request."""

    max_sessions: int = 200
    max_sessions_per_caller: int = 32
    idle_seconds: float = 600.0


@dataclass
class _SessionCap:
    """Refuses a caller's new session past its share (429) and another caller's session (404,
    as if unknown); counts the sessions the SDK opens (the ``Mcp-Session-Id`` of its answers)
    and forgets them when deleted or idle as the SDK counts it: no request in flight for
    ``idle_seconds`` (a session busy with a long call was forgotten while the SDK kept it, so
    it left its caller's share and its id let any caller in)."""

    app: ASGIApp
    limits: SessionLimits
    used: dict[str, tuple[str, float]] = field(default_factory=dict)  # id -> (caller, last use)
    # caller -> requests opening a session whose id has not come back yet: counted with
    # ``used``, taken with no await after the check (requests sent together all passed it)
    opening: dict[str, int] = field(default_factory=dict)
    busy: dict[str, int] = field(default_factory=dict)  # id -> its requests in flight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        caller = str(scope.get("state", {}).get("caller", ""))
        given = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"mcp-session-id"),
            None,
        )
        now = time.monotonic()
        self._forget_idle(now)
        if given is not None:
            owner = self.used.get(given, (caller, now))[0]
            if owner != caller:  # another caller's session: as if it did not exist
                await refuse(send, 404, "unknown MCP session: start a new one")
                return
            if scope["method"] == "DELETE":
                self.used.pop(given, None)
                await self.app(scope, receive, send)
                return
            await self._in_flight(given, caller, scope, receive, send)
            return
        mine = sum(1 for who, _ in self.used.values() if who == caller)
        mine += self.opening.get(caller, 0)
        if scope["method"] == "POST" and mine >= self.limits.max_sessions_per_caller:
            await refuse(
                send,
                429,
                f"you have {mine} open MCP sessions: close one (DELETE) or reuse one",
            )
            return
        self.opening[caller] = self.opening.get(caller, 0) + 1
        pending = True
        opened_id: str | None = None

        def opened() -> None:
            nonlocal pending
            if pending:
                pending = False
                left = self.opening.pop(caller) - 1
                if left:
                    self.opening[caller] = left

        async def counting(message: Message) -> None:
            nonlocal opened_id
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", []):
                    if key.lower() == SESSION_HEADER.encode():
                        opened_id = value.decode("latin-1")
                        self.used[opened_id] = (caller, time.monotonic())
                        self.busy[opened_id] = self.busy.get(opened_id, 0) + 1
                opened()  # the session (if any) now counts in ``used``
            await send(message)

        try:
            await self.app(scope, receive, counting)
        finally:
            opened()
            if opened_id is not None:
                self._done(opened_id, caller)

    async def _in_flight(
        self, given: str, caller: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Serve a request of a known session: not idle until its last request ends."""
        self.busy[given] = self.busy.get(given, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._done(given, caller)

    def _done(self, given: str, caller: str) -> None:
        left = self.busy.pop(given, 1) - 1
        if left:
            self.busy[given] = left
        if given in self.used:
            self.used[given] = (caller, time.monotonic())  # idle from now, as the SDK counts

    def _forget_idle(self, now: float) -> None:
        idle = [
            key
            for key, (_, last) in self.used.items()
            if now - last > self.limits.idle_seconds and not self.busy.get(key)
        ]
        for key in idle:
            del self.used[key]


def mcp_http_app(
    server: Server[Any],
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    allowed_hosts: Iterable[str] = (),
    token: str | Mapping[str, str] | None = None,
    limits: Limits | None = None,
    sessions: SessionLimits = SessionLimits(),
) -> Any:
    """``server`` (from ``mcp_server``) as a streamable HTTP ASGI app at ``/mcp``, hardened
    (``_hardened.Hardened``) and with its sessions bounded (``sessions``); ``host`` is the bound
    address (its names are the ``Host`` values accepted, with ``allowed_hosts``)."""
    from mcp.server.transport_security import TransportSecuritySettings

    limits = limits or Limits()
    hosts = allowed_host_names(host, allowed_hosts)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in hosts] + sorted(hosts),
        allowed_origins=[f"http://{name}:*" for name in hosts],
    )
    app = server.streamable_http_app(
        host=host,
        transport_security=security,
        max_request_body_size=limits.max_body_bytes,
        session_idle_timeout=sessions.idle_seconds,
        max_sessions=sessions.max_sessions,
    )
    return Hardened(
        _SessionCap(app, sessions),
        surface=SURFACE,
        allowed_hosts=hosts,
        port=port,
        token=token,
        limits=limits,
    )


__all__ = ["SessionLimits", "mcp_http_app", "mcp_server"]
