"""``agentensemble run crew.yaml --input topic=AI``: run a crew file and print the result."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from agentensemble.cli import EXIT_FAILED, EXIT_OK, Command
from agentensemble.cli._common import (
    WEBHOOK_SECRET_ENV,
    UsageError,
    add_run_arguments,
    check_output_path,
    load_crew,
    output_json,
    parse_inputs,
    print_out,
    report_error,
    usage_failure,
)
from agentensemble.cli._options import MAX_COUNT, finite_number
from agentensemble.errors import AgentEnsembleError, ConfigurationError, PromptTemplateError
from agentensemble.limits import UsageLimits
from agentensemble.outputs import EnsembleOutput

if TYPE_CHECKING:
    from agentensemble.ensemble import Ensemble


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(parser)
    parser.add_argument(
        "--session",
        metavar="NAME",
        help="continue the conversation NAME (kept in the crew file's memory: store)",
    )
    parser.add_argument(
        "--max-cost",
        metavar="USD",
        type=finite_number("--max-cost", MAX_COUNT),
        help="stop the run before a model call would pass USD dollars (docs/limits.md)",
    )
    parser.add_argument(
        "--max-model-calls",
        metavar="N",
        type=finite_number("--max-model-calls", MAX_COUNT, int),
        help="stop the run before its N+1th model call",
    )


def _with_limits(ensemble: Ensemble, args: argparse.Namespace) -> None:
    """``--max-cost`` / ``--max-model-calls`` over the crew file's ``limits:``."""
    given = {"cost_usd": getattr(args, "max_cost", None)}
    given["model_calls"] = getattr(args, "max_model_calls", None)
    chosen = {key: value for key, value in given.items() if value is not None}
    if chosen:
        kept = ensemble.limits.model_dump(exclude_none=True) if ensemble.limits else {}
        ensemble.limits = UsageLimits(**{**kept, **chosen})


def run(args: argparse.Namespace) -> int:
    from agentensemble.cli._progress import CliProgress

    try:
        inputs = parse_inputs(args.input)
        if args.trace and "trace" not in EnsembleOutput.model_fields:
            raise UsageError(
                "--trace needs run traces (EnsembleOutput.trace), which this version of "
                "agentensemble does not record yet"
            )
        if args.trace:
            check_output_path("--trace", args.trace)  # before paying for the run, not after it
        session = getattr(args, "session", None)
        if session is not None and not session.strip():
            raise UsageError("--session needs a non-blank name such as user-42")
        ensemble = load_crew(args)  # with --review and --model
        _with_limits(ensemble, args)
        if session is not None and ensemble.memory is None:
            raise UsageError(
                f"--session {session} needs a store to keep the conversation in: add "
                "`memory: memory.sqlite` (or `memory: {url_env: VAR}`) to the crew file"
            )
    except (UsageError, ConfigurationError) as error:
        return usage_failure(args, error)
    ensemble.listeners = [*ensemble.listeners, CliProgress(verbose=args.verbose)]
    try:
        output = ensemble.run(inputs, session=session) if session else ensemble.run(inputs)
    except PromptTemplateError as error:
        names = " ".join(f"--input {name}=..." for name in error.missing)
        return usage_failure(args, UsageError(f"{error} On the command line: {names}"))
    except ConfigurationError as error:  # found before any model call: the file or the inputs
        return usage_failure(args, error)
    except AgentEnsembleError as error:
        return report_error(args, error, EXIT_FAILED)
    if args.trace:
        trace = getattr(output, "trace", None)
        if trace is None:
            _print_result(args, output)
            return report_error(args, UsageError("the run recorded no trace to save"), EXIT_FAILED)
        _print_result(args, output)  # the result first: a failing save must not lose it
        try:
            trace.save(args.trace)
        except OSError as error:
            reason = error.strerror or type(error).__name__
            return report_error(
                args, UsageError(f"--trace: cannot write {args.trace!r}: {reason}"), EXIT_FAILED
            )
        return EXIT_OK
    _print_result(args, output)
    return EXIT_OK


def _print_result(args: argparse.Namespace, output: EnsembleOutput) -> None:
    if args.json:
        payload = {
            "ok": True,
            "exit_code": EXIT_OK,
            "exit_reason": output.exit_reason.value,
            "raw": output.raw,
            "parsed": output_json(output.task_outputs[-1])["parsed"]
            if output.task_outputs
            else None,
            "tasks": [output_json(o) for o in output.task_outputs],
            "usage": output.usage.model_dump(),
            "duration_s": round(output.total_duration.total_seconds(), 3),
        }
        print_out(json.dumps(payload, indent=2, default=str))
        return
    if args.verbose and len(output.task_outputs) > 1:
        for task_output in output.task_outputs:
            title = task_output.task_name or task_output.task_description.splitlines()[0]
            print_out(f"## {title} ({task_output.agent_role})\n\n{task_output.raw}\n")
    else:
        print_out(output.raw)
    seconds = output.total_duration.total_seconds()
    print(
        f"{output.exit_reason.value}: {len(output.task_outputs)} task(s) in {seconds:.2f}s, "
        f"{output.usage.total_tokens} tokens",
        file=sys.stderr,
    )


COMMAND = Command(
    name="run",
    help="run a crew file and print the result",
    add_arguments=add_arguments,
    run=run,
)

__all__ = ["COMMAND", "WEBHOOK_SECRET_ENV"]
