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
from agentensemble.cli._options import port_number, whole_number
from agentensemble.ensemble import Ensemble

TOKEN_ENV = "AGENTENSEMBLE_SERVE_TOKEN"

MAX_BODY_BYTES = 1024**3
"""``--max-body`` at most 1 GiB: a larger body is held in memory whole by the apps."""


def add_serving_arguments(parser: argparse.ArgumentParser, *, default_port: int) -> None:
    parser.add_argument("crew", help="the crew file (YAML)")
    parser.add_argument(
        "--model",
        help=f"use this model for every agent (a litellm name, or 'scripted' for an offline "
        f"dry run); default: ${MODEL_ENV}, else the file's settings",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument(
        "--port",
        type=port_number(),
        default=default_port,
        help=f"port ({default_port}; 0: any free one)",
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
        type=whole_number("--max-body", 1, MAX_BODY_BYTES),
        default=1024 * 1024,
        metavar="BYTES",
        help="the largest request body accepted (1 MiB)",
    )


def crew_factory(args: argparse.Namespace) -> Any:
    """A factory building the crew afresh for every call (fresh tools and state per run);
    built once here so a bad file fails at start (ConfigurationError: exit 2).

    The file is read again for every call (an edit applies to the next call), but parsed again
    only when its text changed: parsing the YAML cost more than the run of a small crew."""
    model_name = args.model or os.environ.get(MODEL_ENV)
    parsed = _ParsedCrew(Path(args.crew))

    def build() -> Ensemble:
        ensemble = parsed.build()
        if model_name:
            use_model(ensemble, model_name)
        return ensemble

    build()
    return build


class _ParsedCrew:
    """A crew file's parsed document, kept while the file's text stays the same."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._text: str | None = None
        self._doc: Any = None

    def build(self) -> Ensemble:
        from agentensemble.config._crew_imports import crew_folder
        from agentensemble.config._positions import load_located
        from agentensemble.config.loader import build_ensemble, read_crew_text

        text = read_crew_text(self.path)  # bounded; an error names the file and what is wrong
        if text != self._text:
            self._doc = load_located(text, str(self.path))  # raises before the text is kept
            self._text = text
        with crew_folder(str(self.path.resolve().parent)):
            return build_ensemble(self._doc)


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
    if args.host in ("0.0.0.0", "::") and not args.allow_host:
        raise UsageError(
            f"--host {args.host} listens on every address, so no Host name is known: name the "
            "ones clients use with --allow-host NAME (a request with any other is refused)"
        )
    if token is None and not is_loopback(args.host):
        raise UsageError(
            f"--host {args.host} is reachable from other machines: set ${TOKEN_ENV} to a "
            "bearer token clients must send (and put the server behind TLS)"
        )
    return token


def choose_port(args: argparse.Namespace) -> tuple[int, str]:
    """The port to serve on (``--port 0``: a free one, found now so the address is known before
    the app is built) and the base URL."""
    port = args.port
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # a port in use is found here, as uvicorn binds (SO_REUSEADDR): one line and exit 2,
        # not uvicorn's "ERROR:" log line and its startup-failure exit code 3
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((args.host, port))
        except OSError as error:
            reason = error.strerror or str(error)
            raise UsageError(f"cannot listen on {args.host}:{port}: {reason}") from None
        port = probe.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    return port, f"http://{shown}:{port}"


def serve_app(app: Any, args: argparse.Namespace, port: int, url: str, what: str) -> None:
    """Serve ``app`` (hardened: ``serve/_hardened.py``) with uvicorn; once it accepts
    connections the address goes to stderr (stdout stays clean). uvicorn binds the address
    itself: handing it a socket made every request some 40 ms slower."""
    import uvicorn

    from agentensemble.serve._hardened import hardened_server

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if not self.should_exit:
                print(f"agentensemble {what} on {url}", file=sys.stderr, flush=True)

    server = hardened_server(
        app,
        host=args.host,
        port=port,
        server_class=Announcing,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    from agentensemble.cli._quiet_stop import quiet_stop

    with quiet_stop(server):  # stopped with calls in flight: one line, no traceback
        server.run()
    if not server.started:
        raise UsageError(f"cannot listen on {args.host}:{port}")


__all__ = [
    "TOKEN_ENV",
    "add_serving_arguments",
    "choose_port",
    "crew_factory",
    "serve_app",
    "serving_token",
    "tool_name",
]
