"""``mcp_server``: ensembles as the tools of an MCP server (the ``mcp`` package's own ``Server``).

One tool per ensemble. A call checks its arguments before anything runs, builds a fresh ensemble
when given a factory, runs it with a listener that turns task events into progress
notifications, and answers with the final output (and ``structuredContent`` when the last task
is typed). A failure is a tool result with ``isError`` and the redacted error text; a client's
cancellation cancels the run (the SDK cancels the handler's task). Calls run concurrently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

from agentensemble._run import check_setup, execute
from agentensemble.ensemble import Ensemble
from agentensemble.errors import ConfigurationError
from agentensemble.logging import redact, redact_text
from agentensemble.serve._durable_serving import check_registered, run_durably
from agentensemble.serve._mcp_rounds import ServedRun
from agentensemble.serve._progress import ProgressPump
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


def _describe(name: str, source: EnsembleSource) -> _Served:
    check_name(name)
    try:
        ensemble = ensemble_of(source)
        # refused setups fail here, at start, not at the first call: gated tools or reviews
        # with no review handler (an ensemble changed after it was built is checked again)
        check_setup(ensemble)
    except ConfigurationError as error:
        raise ConfigurationError(f"cannot serve {name!r}: {error}") from error
    tool = types.Tool(
        name=name,
        description=description(ensemble),
        input_schema=input_schema(ensemble),
        output_schema=output_schema(ensemble),
    )
    return _Served(name, source, input_kinds(ensemble), tool)


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


async def _start(
    served: _Served,
    ctx: ServerRequestContext[Any],
    arguments: Any,
    parked: dict[str, ServedRun],
    durable: Any = None,
) -> Any:
    """A new call: arguments checked and the ensemble built before anything runs."""
    try:
        inputs = check_arguments(served.variables, arguments)
        ensemble = ensemble_of(served.source)
    except BadArguments as error:
        return _error_result(f"{served.name}: {error}")
    except Exception as error:
        return _error_result(f"{served.name}: the ensemble could not be built: {error_text(error)}")
    run = ServedRun(ctx.session, ctx.request_id, parked)

    async def report(progress: float, total: float | None, message: str) -> None:
        await run.session.report_progress(progress, total, message)

    async def work() -> types.CallToolResult:
        current_call.set(run.call)  # this task's own context: the review handler reads it
        pump = ProgressPump(report)
        try:
            if durable is None:
                output = await execute(ensemble, inputs, [pump])
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

    return await run.start(work)


def mcp_server(
    ensembles: Mapping[str, Ensemble | Any],
    name: str = "agentensemble",
    *,
    durable: Any = None,
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
    """
    if not isinstance(ensembles, Mapping) or not ensembles:
        raise ConfigurationError(
            'mcp_server needs a mapping of tool names to ensembles: {"name": ensemble}'
        )
    served = {key: _describe(key, source) for key, source in ensembles.items()}
    if durable is not None:
        check_registered(durable, served)
    tools = [entry.tool for entry in served.values()]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    parked: dict[str, ServedRun] = {}  # runs waiting for their client's answer (2026-07-28)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        entry = served.get(params.name)
        if entry is None:
            known = ", ".join(served)
            return _error_result(f"unknown tool {params.name[:80]!r}; this server has: {known}")
        if params.request_state is not None:  # the client answers a question of a parked run
            run = parked.pop(params.request_state, None)
            if run is None:
                return _error_result(f"{entry.name}: unknown or expired request_state")
            result: Any = await run.resume(ctx.session, params.input_responses)
        else:
            result = await _start(entry, ctx, params.arguments, parked, durable)
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


__all__ = ["mcp_server"]
