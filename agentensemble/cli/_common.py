"""What the subcommands share: reading the crew file, ``--input`` pairs, ``--model``, and
printing errors in words (or JSON) with the right exit code."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from agentensemble.cli import EXIT_USAGE
from agentensemble.ensemble import Ensemble
from agentensemble.redaction import redact_text
from agentensemble.workflows.step import step_kind, walk

MODEL_ENV = "AGENTENSEMBLE_MODEL"


class UsageError(Exception):
    """A bad command line or crew file: exit code 2."""


def add_crew_arguments(parser: argparse.ArgumentParser, *, crew_optional: bool = False) -> None:
    # optional only where another option may have swallowed it (see run_command._review)
    parser.add_argument("crew", nargs="?" if crew_optional else None, help="the crew file (YAML)")
    parser.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a template variable, e.g. --input topic=AI (repeatable)",
    )
    parser.add_argument(
        "--model",
        help=f"use this model for every agent (a litellm name, or 'scripted' for an offline "
        f"dry run); default: ${MODEL_ENV}, else the file's settings",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def parse_inputs(pairs: list[str]) -> dict[str, str]:
    inputs: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--input {pair!r}: write NAME=VALUE, e.g. --input topic=AI")
        inputs[name.strip()] = value
    return inputs


def load_crew(args: argparse.Namespace) -> Ensemble:
    """The ensemble of ``args.crew`` with ``--model`` (or ``$AGENTENSEMBLE_MODEL``) applied."""
    ensemble = Ensemble.from_yaml(args.crew)  # ConfigurationError: the caller exits with 2
    model_name = args.model or os.environ.get(MODEL_ENV)
    if model_name:
        use_model(ensemble, model_name)
    return ensemble


def use_model(ensemble: Ensemble, name: str) -> None:
    """Every agent (the synthesised ones and a hierarchical manager too) uses ``name``."""
    model: Any = name
    if name == "scripted":
        from agentensemble.cli._offline import OfflineChatModel

        model = OfflineChatModel()
    ensemble.llm = model
    if ensemble.manager_llm is not None:  # else the manager uses ensemble.llm already
        ensemble.manager_llm = model
    for step in walk(ensemble.tasks):  # nested ensembles and their agents too
        if step_kind(step) == "ensemble":
            step.llm = model
            for agent in step.agents:
                agent.llm = model
        elif step_kind(step) == "task" and step.agent is not None:
            step.agent.llm = model
    for agent in ensemble.agents:
        agent.llm = model


def placeholder_inputs(ensemble: Ensemble, given: dict[str, Any]) -> dict[str, Any]:
    """A stand-in for every input the run needs and ``given`` lacks (a one-item list for a
    ``for_each`` input), so checks can run before the real inputs are known."""
    from agentensemble.workflows.prepare import needed_inputs

    kinds = needed_inputs(ensemble)
    return {
        name: [f"<{name}>"] if kind == "list" else f"<{name}>"
        for name, kind in kinds.items()
        if name not in given
    }


def check_before_any_call(ensemble: Ensemble, inputs: dict[str, Any]) -> None:
    """Every check a run makes before its first model call (models and their keys, tools,
    reviews, workers and manager), with stand-ins for the inputs not given; no model call."""
    import warnings

    from agentensemble.workflows.prepare import prepare_run

    values = {**placeholder_inputs(ensemble, inputs), **inputs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hints are reported by `validate`, once, in words
        prepared = prepare_run(ensemble, values)
        ensemble._run_settings(ensemble._team(prepared, values))  # workers, peers, manager


def report_error(args: argparse.Namespace, error: BaseException, code: int) -> int:
    """Say what went wrong on stderr (or as JSON on stdout with ``--json``); return ``code``."""
    message = redact_text(str(error))
    if getattr(args, "json", False):
        payload: dict[str, Any] = {
            "ok": False,
            "exit_code": code,
            "error": {"type": type(error).__name__, "message": message},
        }
        completed = getattr(error, "completed_outputs", None)
        if completed:
            payload["completed_tasks"] = [output_json(o) for o in completed]
        print_out(json.dumps(payload, indent=2, default=str))
    print_out(f"agentensemble: {message}", sys.stderr)
    return code


def print_out(text: str, stream: TextIO | None = None) -> None:
    """Print what the CLI shows (results, errors, JSON) through the redaction policy: a secret
    the run met (a provider's echo, a server's URL token) never reaches the terminal or a pipe."""
    print(redact_text(text), file=stream if stream is not None else sys.stdout)


def usage_failure(args: argparse.Namespace, error: BaseException) -> int:
    return report_error(args, error, EXIT_USAGE)


def output_json(output: Any) -> dict[str, Any]:
    """One task's output as JSON-ready data."""
    parsed = output.parsed
    if hasattr(parsed, "model_dump"):
        parsed = parsed.model_dump(mode="json")
    return {
        "name": output.task_name,
        "description": output.task_description,
        "agent_role": output.agent_role,
        "raw": output.raw,
        "parsed": _jsonable(parsed),
        "llm_calls": output.llm_calls,
        "tool_calls": len(output.tool_calls),
        "duration_s": round(output.duration.total_seconds(), 3),
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


__all__ = [
    "MODEL_ENV",
    "UsageError",
    "add_crew_arguments",
    "load_crew",
    "output_json",
    "parse_inputs",
    "print_out",
    "report_error",
    "usage_failure",
    "use_model",
]
