"""The reference review server's command line: ``python -m agentensemble_review.server``.

``server.main`` hands its ``ReviewServer`` class in, so this module sits below ``server.py``
(no import circle between the server and its command line)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Protocol

from agentensemble.cli._options import port_number
from agentensemble_review._server_guard import is_loopback


class _Serving(Protocol):
    """What the command line needs of the server it starts (``ReviewServer``)."""

    @property
    def url(self) -> str: ...

    @property
    def reviews_url(self) -> str: ...

    @property
    def page_url(self) -> str: ...

    def bind(self) -> object: ...

    def serve_forever(self) -> None: ...


class _MakeServer(Protocol):
    def __call__(
        self,
        host: str,
        port: int,
        secret: str | None,
        *,
        verbose: bool,
        allowed_hosts: list[str],
    ) -> _Serving: ...


def main(argv: list[str] | None, make_server: _MakeServer) -> int:
    """Command line: run the reference review server (built by ``make_server``) until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m agentensemble_review.server",
        description="Reference webhook for agentensemble reviews, with a web page to decide.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port_number(), default=8765, help="port (default 8765; 0 = any)"
    )
    parser.add_argument(
        "--secret",
        default=os.environ.get("AGENTENSEMBLE_REVIEW_SECRET"),
        help="verify X-AgentEnsemble-Signature with this secret "
        "(default: $AGENTENSEMBLE_REVIEW_SECRET)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        help="a host name the server answers to besides loopback and --host (repeatable)",
    )
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    args = parser.parse_args(argv)
    server = make_server(
        args.host, args.port, args.secret, verbose=not args.quiet, allowed_hosts=args.allowed_host
    )
    try:
        server.bind()
    except OSError as error:  # a port in use, a host name that does not resolve: one line
        reason = error.strerror or str(error) or type(error).__name__
        print(
            f"agentensemble-review-server: cannot listen on {args.host}:{args.port}: {reason}",
            file=sys.stderr,
        )
        return 2
    if not is_loopback(args.host):
        warning = "plain HTTP, the token is the only login: add TLS and an identity provider"
        print(f"warning: listening on {args.host}: {warning}", file=sys.stderr)
    signed = "signatures verified" if args.secret else "no secret: signatures not checked"
    print(f"Review server on {server.url} ({signed})", flush=True)
    print(f"Webhook URL: {server.reviews_url}", flush=True)
    print(f"Open this address to decide (it holds the token): {server.page_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    return 0


__all__ = ["main"]
