"""What ``serve-mcp`` and ``serve-a2a`` share: the crew file as one served ensemble, the bind
address rules (loopback unless told otherwise, a token required off loopback) and uvicorn."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any

from agentensemble.cli._common import MODEL_ENV, UsageError, use_model
from agentensemble.ensemble import Ensemble

TOKEN_ENV = "AGENTENSEMBLE_SERVE_TOKEN"


def add_serving_arguments(parser: argparse.ArgumentParser, *, default_port: int) -> None:
    parser.add_argument("crew", help="the crew file (YAML)")
    parser.add_argument(
        "--model",
        help=f"use this model for every agent (a litellm name, or 'scripted' for an offline "
        f"dry run); default: ${MODEL_ENV}, else the file's settings",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=default_port, help=f"port ({default_port}; 0: any free one)"
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name clients may use to reach the server (repeatable)",
    )
    parser.add_argument(
        "--max-body",
        type=int,
        default=1024 * 1024,
        metavar="BYTES",
        help="the largest request body accepted (1 MiB)",
    )


def crew_factory(args: argparse.Namespace) -> Any:
    """A factory building the crew afresh for every call (fresh tools and state per run);
    built once here so a bad file fails at start (ConfigurationError: exit 2)."""
    model_name = args.model or os.environ.get(MODEL_ENV)

    def build() -> Ensemble:
        ensemble = Ensemble.from_yaml(args.crew)
        if model_name:
            use_model(ensemble, model_name)
        return ensemble

    build()
    return build


def tool_name(args: argparse.Namespace) -> str:
    from agentensemble.serve._shape import tool_name_for_file

    return tool_name_for_file(Path(args.crew).stem)


def serving_token(args: argparse.Namespace) -> str | None:
    """The bearer token: ``$AGENTENSEMBLE_SERVE_TOKEN``; required when not bound to loopback."""
    from agentensemble.logging import register_secret
    from agentensemble.serve._http_guard import is_loopback

    token = os.environ.get(TOKEN_ENV) or None
    if token is not None:
        if len(token) < 16:
            raise UsageError(f"${TOKEN_ENV} is too short: use at least 16 random characters")
        register_secret(token)
    if token is None and not is_loopback(args.host):
        raise UsageError(
            f"--host {args.host} is reachable from other machines: set ${TOKEN_ENV} to a "
            "bearer token clients must send (and put the server behind TLS)"
        )
    return token


def bind(args: argparse.Namespace) -> tuple[socket.socket, str]:
    """A listening socket on ``--host``/``--port`` (0: any free port) and its base URL."""
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as error:
        sock.close()
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    return sock, f"http://{shown}:{port}"


def serve_app(app: Any, sock: socket.socket, url: str, what: str) -> None:
    """Serve ``app`` with uvicorn on ``sock``; the address goes to stderr (stdout stays clean)."""
    import uvicorn

    print(f"agentensemble {what} on {url}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])


__all__ = [
    "TOKEN_ENV",
    "add_serving_arguments",
    "bind",
    "crew_factory",
    "serve_app",
    "serving_token",
    "tool_name",
]
