"""``agentensemble serve-ag-ui crew.yaml --port N``: the crew file as an AG-UI agent (``POST /``
takes a ``RunAgentInput`` and streams AG-UI events). Needs the extra
``agentensemble-py[ag-ui]``. A crew with ``review: {handler: ag-ui}`` asks the front end.

``--durable [DATABASE]``: every run is a durable run (``_serving_durable``), recorded in the
database and resumed by the next start after a crash. Its reviews wait in the durable run, so
``handler: ag-ui`` is refused there (use a webhook or the web console)."""

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
from agentensemble.cli._serving_durable import add_durable_argument, durable_runtime, where
from agentensemble.errors import ConfigurationError

DEFAULT_PORT = 8770


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_serving_arguments(parser, default_port=DEFAULT_PORT)
    add_durable_argument(parser)


def run(args: argparse.Namespace) -> int:
    try:
        from agentensemble.serve.ag_ui import ag_ui_app
    except ImportError as error:
        print(
            "agentensemble serve-ag-ui needs the ag-ui extra: "
            f"pip install 'agentensemble-py[ag-ui]' ({error})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        factory = crew_factory(args)
        token = serving_token(args)
        port, bound = choose_port(args)
        name = tool_name(args)
        with durable_runtime(args, {name: factory}) as runtime:
            app = ag_ui_app(
                factory,
                token=token,
                host=args.host,
                port=port,
                allowed_hosts=args.allow_host,
                max_body_bytes=args.max_body,
                durable=runtime,
                name=name,
            )
            what = "AG-UI agent (POST a RunAgentInput to /)"
            serve_app(
                app, args, port, bound, what if runtime is None else f"{what}, {where(runtime)}"
            )
    except (UsageError, ConfigurationError) as error:
        return usage_failure(args, error)
    return EXIT_OK


COMMAND = Command(
    name="serve-ag-ui",
    help="serve a crew file as an AG-UI agent over HTTP (for CopilotKit and other front ends)",
    add_arguments=add_arguments,
    run=run,
)

__all__ = ["COMMAND"]
