"""``agentensemble serve-a2a crew.yaml --port N``: the crew file as an A2A agent (agent card at
``/.well-known/agent-card.json``, JSON-RPC at ``/``). Needs the extra ``agentensemble-py[a2a]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentensemble.cli import EXIT_OK, EXIT_USAGE, Command
from agentensemble.cli._common import UsageError, usage_failure
from agentensemble.cli._serving import (
    add_serving_arguments,
    choose_port,
    crew_factory,
    serve_app,
    serving_token,
)
from agentensemble.errors import ConfigurationError

DEFAULT_PORT = 8768


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_serving_arguments(parser, default_port=DEFAULT_PORT)
    parser.add_argument(
        "--url",
        help="the address clients use, put on the agent card (default: the bound http://HOST:PORT/)",
    )
    parser.add_argument("--name", help="the agent's name on its card (default: the file's stem)")
    parser.add_argument("--description", help="the agent's description on its card")


def run(args: argparse.Namespace) -> int:
    try:
        from agentensemble.serve.a2a_serving import a2a_app
    except ImportError as error:
        print(
            f"agentensemble serve-a2a needs the a2a extra: pip install 'agentensemble-py[a2a]' "
            f"({error})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        factory = crew_factory(args)
        token = serving_token(args)
        port, bound = choose_port(args)
        url = args.url or f"{bound}/"
        stem = Path(args.crew).stem
        app = a2a_app(
            factory,
            name=args.name or stem,
            description=args.description or f"The agentensemble crew {stem}",
            url=url,
            token=token,
            allowed_hosts=args.allow_host,
            max_body_bytes=args.max_body,
        )
        serve_app(app, args, port, bound, f"A2A agent {url}")
    except (UsageError, ConfigurationError) as error:
        return usage_failure(args, error)
    return EXIT_OK


COMMAND = Command(
    name="serve-a2a",
    help="serve a crew file as an A2A agent over HTTP",
    add_arguments=add_arguments,
    run=run,
)

__all__ = ["COMMAND"]
