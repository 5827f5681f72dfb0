"""``agentensemble serve-mcp crew.yaml``: the crew file as one MCP tool (stdio, or streamable
HTTP at ``/mcp`` with ``--http``). Needs the extra ``agentensemble-py[mcp]``."""

from __future__ import annotations

import argparse
import sys

from agentensemble.cli import EXIT_OK, EXIT_USAGE, Command
from agentensemble.cli._common import UsageError, usage_failure
from agentensemble.cli._serving import (
    add_serving_arguments,
    choose_port,
    crew_factory,
    serve_app,
    serving_token,
    tool_name,
)
from agentensemble.errors import ConfigurationError

DEFAULT_PORT = 8767


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_serving_arguments(parser, default_port=DEFAULT_PORT)
    parser.add_argument(
        "--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio"
    )


def run(args: argparse.Namespace) -> int:
    try:
        from agentensemble.serve.mcp_serving import mcp_server
    except ImportError as error:
        print(
            f"agentensemble serve-mcp needs the mcp extra: pip install 'agentensemble-py[mcp]' "
            f"({error})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        factory = crew_factory(args)
        if not args.http:
            _refuse_console_review(factory())
        token = serving_token(args) if args.http else None
        server = mcp_server({tool_name(args): factory})
    except (UsageError, ConfigurationError) as error:
        return usage_failure(args, error)
    if not args.http:
        import anyio

        anyio.run(_serve_stdio, server)
        return EXIT_OK
    try:
        port, url = choose_port(args)
        app = _http_app(server, args, token, port)
        serve_app(app, args, port, url, "MCP server (streamable HTTP at /mcp)")
    except UsageError as error:
        return usage_failure(args, error)
    return EXIT_OK


def _refuse_console_review(ensemble: object) -> None:
    """Over stdio, stdin is the protocol: a console reviewer would read (and eat) its bytes."""
    handler = getattr(ensemble, "review_handler", None)
    if type(handler).__name__ == "ConsoleReviewHandler":
        raise UsageError(
            "a console review handler cannot work over stdio (stdin carries the MCP protocol); "
            "use review handler mcp, webhook or auto, or serve with --http"
        )


async def _serve_stdio(server: object) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())  # type: ignore[attr-defined]


def _http_app(server: object, args: argparse.Namespace, token: str | None, port: int) -> object:
    from dataclasses import replace

    from agentensemble.serve._hardened import Limits
    from agentensemble.serve.mcp_serving import mcp_http_app

    limits = replace(Limits(), max_body_bytes=args.max_body)
    return mcp_http_app(
        server,  # type: ignore[arg-type]
        host=args.host,
        port=port,
        allowed_hosts=args.allow_host,
        token=token,
        limits=limits,
    )


COMMAND = Command(
    name="serve-mcp",
    help="serve a crew file as an MCP tool (stdio, or streamable HTTP with --http)",
    add_arguments=add_arguments,
    run=run,
)

__all__ = ["COMMAND"]
