"""``agentensemble validate crew.yaml``: every check a run makes before its first model call
(the file, tools, context order, reviews, models, template variables), and no model call."""

from __future__ import annotations

import argparse
import json
import sys

from agentensemble.cli import EXIT_OK, Command
from agentensemble.cli._common import (
    UsageError,
    add_crew_arguments,
    check_before_any_call,
    load_crew,
    parse_inputs,
    placeholder_inputs,
    print_out,
    usage_failure,
)
from agentensemble.errors import ConfigurationError
from agentensemble.hints import missing_context
from agentensemble.workflows.prepare import needed_inputs
from agentensemble.workflows.step import step_kind


def run(args: argparse.Namespace) -> int:
    try:
        inputs = parse_inputs(args.input)
        ensemble = load_crew(args)
        needed = list(needed_inputs(ensemble))
        missing = list(placeholder_inputs(ensemble, inputs))
        if args.input and missing:
            raise UsageError(f"missing --input for: {', '.join(missing)}")
        check_before_any_call(ensemble, inputs)
    except (UsageError, ConfigurationError) as error:
        return usage_failure(args, error)
    notes = missing_context([step for step in ensemble.tasks if step_kind(step) == "task"])
    if args.json:
        payload = {
            "ok": True,
            "exit_code": EXIT_OK,
            "crew": args.crew,
            "tasks": [task.label for task in ensemble.tasks],
            "inputs": needed,
            "warnings": notes,
        }
        print_out(json.dumps(payload, indent=2))
    else:
        inputs_text = f"; inputs: {', '.join(needed)}" if needed else ""
        print_out(f"{args.crew}: OK, {len(ensemble.tasks)} task(s){inputs_text}")
        for note in notes:
            print_out(f"warning: {note}", sys.stderr)
    return EXIT_OK


COMMAND = Command(
    name="validate",
    help="check a crew file without calling any model",
    add_arguments=add_crew_arguments,
    run=run,
)

__all__ = ["COMMAND"]
