"""``agentensemble serve-api crew.yaml --port N``: the crew file behind the run API (submit runs,
stream their events, cancel them, decide their reviews over HTTP; docs/serve.md). Needs the
extra ``agentensemble-py[serve]``."""

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
    tool_name,
)
from agentensemble.errors import ConfigurationError

DEFAULT_PORT = 8769


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_serving_arguments(parser, default_port=DEFAULT_PORT)
    parser.add_argument(
        "--name", help="the ensemble's name in POST /runs (default: from the file's stem)"
    )
    parser.add_argument(
        "--page", metavar="HTML", help="an HTML file served at / (a front end on the same origin)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        from agentensemble.serve.run_api_serving import run_api
    except ImportError as error:
        print(
            f"agentensemble serve-api needs the serve extra: pip install 'agentensemble-py[serve]' "
            f"({error})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        factory = crew_factory(args)
        token = serving_token(args)
        port, url = choose_port(args)
        name = args.name or tool_name(args)
        page = _page(args.page)
        from dataclasses import replace

        from agentensemble.serve._hardened import Limits

        app = run_api(
            {name: factory},
            token=token,
            allowed_hosts=[
                *([] if args.host in ("0.0.0.0", "::") else [args.host]),
                *args.allow_host,
            ],
            port=port,
            limits=replace(Limits(), max_body_bytes=args.max_body),
            page=page,
        )
        serve_app(app, args, port, url, f"run API for {name!r} ({Path(args.crew).name})")
    except (UsageError, ConfigurationError) as error:
        return usage_failure(args, error)
    return EXIT_OK


def _page(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"--page {path}: cannot read it ({error})") from None


COMMAND = Command(
    name="serve-api",
    help="serve a crew file as the run API over HTTP (submit, watch, cancel, review runs)",
    add_arguments=add_arguments,
    run=run,
)

__all__ = ["COMMAND"]
