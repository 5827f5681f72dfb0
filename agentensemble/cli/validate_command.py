"""``agentensemble validate crew.yaml``: every check a run makes before its first model call
(the file, tools, context order, reviews, models, template variables), and no model call.

It takes the same options as ``run`` (so the command line it approves is the one that runs),
starts the crew's tool sources (MCP servers) and stops them again, to check they start and list
their tools, and needs no API key: a missing key is a warning saying how to set it or to run
offline with ``--model scripted``, and everything else is still checked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from agentensemble.cli import EXIT_OK, Command
from agentensemble.cli._common import (
    UsageError,
    add_run_arguments,
    check_before_any_call,
    in_cli_words,
    load_crew,
    parse_inputs,
    placeholder_inputs,
    print_out,
    usage_failure,
    use_model,
)
from agentensemble.errors import AgentEnsembleError, ModelSettingsError
from agentensemble.hints import missing_context
from agentensemble.workflows.prepare import needed_inputs
from agentensemble.workflows.step import leaf_tasks, step_kind


async def _start_and_stop_tool_sources(ensemble: Any) -> list[str]:
    """Start every tool source (MCP server) of the crew and stop it again; their names."""
    from agentensemble.tools.source import open_tool_sources, tool_sources_in

    tasks = leaf_tasks(ensemble.tasks)  # inside loops, graphs and nested ensembles too
    agents = [*ensemble.agents, *(task.agent for task in tasks if task.agent)]
    sources = tool_sources_in([*(a.tools for a in agents), *(t.tools for t in tasks)])
    async with open_tool_sources(sources):
        pass
    return [source.describe() for source in sources]


def run(args: argparse.Namespace) -> int:
    notes: list[str] = []
    try:
        inputs = parse_inputs(args.input)
        ensemble = load_crew(args)
        needed = list(needed_inputs(ensemble))
        missing = list(placeholder_inputs(ensemble, inputs))
        if args.input and missing:
            raise UsageError(f"missing --input for: {', '.join(missing)}")
        try:
            check_before_any_call(ensemble, inputs)
        except ModelSettingsError as error:
            if not error.missing_key:
                raise
            notes.append(in_cli_words(str(error)))
            use_model(ensemble, "scripted")  # check everything else as a run would
            check_before_any_call(ensemble, inputs)
        sources = asyncio.run(_start_and_stop_tool_sources(ensemble))
    except (UsageError, AgentEnsembleError) as error:
        return usage_failure(args, error)
    notes += missing_context([step for step in ensemble.tasks if step_kind(step) == "task"])
    if args.json:
        payload = {
            "ok": True,
            "exit_code": EXIT_OK,
            "crew": args.crew,
            "tasks": [task.label for task in ensemble.tasks],
            "inputs": needed,
            "tool_sources": sources,
            "warnings": notes,
        }
        print_out(json.dumps(payload, indent=2))
    else:
        inputs_text = f"; inputs: {', '.join(needed)}" if needed else ""
        sources_text = f"; started and stopped: {', '.join(sources)}" if sources else ""
        print_out(f"{args.crew}: OK, {len(ensemble.tasks)} task(s){inputs_text}{sources_text}")
        for note in notes:
            print_out(f"warning: {note}", sys.stderr)
    return EXIT_OK


COMMAND = Command(
    name="validate",
    help="check a crew file without calling any model (same options as run)",
    add_arguments=add_run_arguments,
    run=run,
)

__all__ = ["COMMAND"]
