"""``agentensemble serve-api crew.yaml --port N``: the crew file behind the run API (submit runs,
stream their events, cancel them, decide their reviews over HTTP; docs/serve.md). Needs the
extra ``agentensemble-py[serve]``.

``--durable [DATABASE]``: runs are durable runs (``_serving_durable``) that survive a restart of
the command; a crew's ``review: {handler: api}`` then waits in the durable run
(``DurableReviewHandler``) and is still decided through the API, by the run's caller."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentensemble._base.regular_file import UnreadableFile, read_regular_file
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
from agentensemble.cli._serving_durable import add_durable_argument, durable_runtime, where
from agentensemble.errors import ConfigurationError

DEFAULT_PORT = 8769
MAX_PAGE_BYTES = 5 * 1024 * 1024
"""A ``--page`` longer than this (5 MiB) is refused unread."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_serving_arguments(parser, default_port=DEFAULT_PORT)
    parser.add_argument(
        "--name", help="the ensemble's name in POST /runs (default: from the file's stem)"
    )
    parser.add_argument(
        "--page", metavar="HTML", help="an HTML file served at / (a front end on the same origin)"
    )
    add_durable_argument(parser)


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

        if args.durable is not None:
            factory = _reviews_in_durable_runs(factory)
        with durable_runtime(args, {name: factory}) as runtime:
            app = run_api(
                {name: factory},
                token=token,
                durable=runtime,
                allowed_hosts=[
                    *([] if args.host in ("0.0.0.0", "::") else [args.host]),
                    *args.allow_host,
                ],
                port=port,
                limits=replace(Limits(), max_body_bytes=args.max_body),
                page=page,
            )
            what = f"run API for {name!r} ({Path(args.crew).name})"
            serve_app(
                app, args, port, url, what if runtime is None else f"{what}, {where(runtime)}"
            )
    except (UsageError, ConfigurationError) as error:
        return usage_failure(args, error)
    return EXIT_OK


def _reviews_in_durable_runs(factory: Callable[[], Any]) -> Callable[[], Any]:
    """``review: api`` in a durable run: the review waits in the run (``DurableReviewHandler``,
    kept across restarts), and the run API lists and decides it the same way."""

    def build() -> Any:
        from agentensemble.durable import DurableReviewHandler  # checked by durable_runtime
        from agentensemble.serve._run_api_review import RunAPIReviewHandler

        ensemble = factory()
        if isinstance(ensemble.review_handler, RunAPIReviewHandler):
            ensemble.review_handler = DurableReviewHandler()
        return ensemble

    return build


def _page(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return read_regular_file(path, max_bytes=MAX_PAGE_BYTES).decode("utf-8")
    except UnreadableFile as error:
        raise UsageError(f"--page {path}: cannot read it: it {error.reason}") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"--page {path}: cannot read it: not UTF-8 ({error.reason})") from None


COMMAND = Command(
    name="serve-api",
    help="serve a crew file as the run API over HTTP (submit, watch, cancel, review runs)",
    add_arguments=add_arguments,
    run=run,
)

__all__ = ["COMMAND"]
