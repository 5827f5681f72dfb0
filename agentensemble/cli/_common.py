"""What the subcommands share: reading the crew file, ``--input`` pairs, ``--model``, and
printing errors in words (or JSON) with the right exit code."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, TextIO

from agentensemble._base.display import escape_for_display
from agentensemble._base.saveable import jsonable
from agentensemble.cli import EXIT_USAGE
from agentensemble.ensemble import Ensemble
from agentensemble.redaction import redact_text
from agentensemble.workflows.step import step_kind, walk

MODEL_ENV = "AGENTENSEMBLE_MODEL"


class UsageError(Exception):
    """A bad command line or crew file: exit code 2."""


def check_output_path(option: str, path: str) -> None:
    """A file an option names for writing (``run --trace``, ``eval --save`` / ``--html``,
    ``durable trace --out``) must be writable: in a folder that exists, not a folder itself.
    Checked before the work that fills it, so a typo costs nothing; the write after it still
    reports its own failure in one line."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        raise UsageError(f"{option}: {path!r} is a folder; give a file name")
    if not os.path.isdir(folder):
        raise UsageError(f"{option}: the folder {folder!r} does not exist")
    writable = os.access(target, os.W_OK) if os.path.exists(target) else os.access(folder, os.W_OK)
    if not writable:
        raise UsageError(f"{option}: {path!r} is not writable")


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


WEBHOOK_SECRET_ENV = "AGENTENSEMBLE_WEBHOOK_SECRET"


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``run``; ``validate`` takes the same, so a checked command line runs."""
    add_crew_arguments(parser, crew_optional=True)
    parser.add_argument(
        "--review",
        nargs="+",
        metavar="HANDLER",
        help="who reviews: 'console', 'auto' or 'webhook URL' (the secret from "
        f"${WEBHOOK_SECRET_ENV}); with no policy in the file, reviews the last task",
    )
    parser.add_argument("--trace", metavar="FILE", help="save the run's trace as JSON")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="show every task's output and each step"
    )


def parse_review(args: argparse.Namespace) -> tuple[str, str | None] | None:
    """``--review`` as (kind, url); also finds the crew file the option's nargs swallowed."""
    if args.review and args.crew is None:
        # "--review console crew.yaml": the option's nargs took the crew file; give it back
        takes = 2 if args.review[0] == "webhook" else 1
        if len(args.review) > takes:
            args.crew = args.review.pop()
    if args.crew is None:
        raise UsageError(
            f"the crew file is missing: agentensemble {args.command} CREW.yaml [options]"
        )
    if not args.review:
        return None
    kind, *rest = args.review
    if kind == "webhook" and len(rest) == 1:
        return kind, rest[0]
    if kind in ("console", "auto") and not rest:
        return kind, None
    raise UsageError("--review takes 'console', 'auto' or 'webhook URL'")


def _review_settings(review: tuple[str, str | None] | None, file: str) -> dict[str, Any]:
    if review is None:
        return {}
    from agentensemble.config.loader import review_handler

    kind, url = review
    signed = kind == "webhook" and bool(os.environ.get(WEBHOOK_SECRET_ENV))
    try:
        handler = review_handler(kind, url, WEBHOOK_SECRET_ENV if signed else None)
    except ValueError as error:
        raise UsageError(f"--review: {error}") from None
    settings: dict[str, Any] = {"review_handler": handler}
    if not _file_sets_a_policy(file):
        settings["review_policy"] = "after_last_task"
    return settings


def _file_sets_a_policy(file: str) -> bool:
    from agentensemble.config._positions import ConfigFileError, load_located
    from agentensemble.config.loader import read_crew_text

    try:  # the crew loader's bounded reading; it says what is wrong in its own words
        data = load_located(read_crew_text(file), file).data
    except ConfigFileError:
        return False
    review = data.get("review") if isinstance(data, dict) else None
    policy = review.get("policy") if isinstance(review, dict) else None
    return policy not in (None, "never")


def load_crew(args: argparse.Namespace) -> Ensemble:
    """The ensemble of ``args.crew`` with ``--review`` and ``--model`` (or
    ``$AGENTENSEMBLE_MODEL``) applied."""
    review = parse_review(args) if hasattr(args, "review") else None
    overrides = _review_settings(review, args.crew)
    from agentensemble.config.loader import ensemble_from_yaml

    ensemble = ensemble_from_yaml(args.crew, overrides)  # ConfigurationError: exit code 2
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

    from agentensemble._run import team_and_settings
    from agentensemble.workflows.prepare import prepare_run

    values = {**placeholder_inputs(ensemble, inputs), **inputs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hints are reported by `validate`, once, in words
        prepared = prepare_run(ensemble, values)
        team_and_settings(ensemble, prepared, values)  # workers, peers, manager


#: The library's Python fixes, and what a crew file or the command line writes instead.
_CLI_FIXES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"Pass Ensemble\(review_handler=\.\.\.\)(, e\.g\. ConsoleReviewHandler\(\) "
            r"from agentensemble_review)?"
        ),
        "Add `review: {handler: console}` to the crew file, or pass --review console",
    ),
    (
        re.compile(
            r"Set Agent\(llm=\.\.\.\) or Ensemble\(llm=\.\.\.\) to a model name such as "
            r"'openai/gpt-4o-mini', an LLM or a ChatModel"
        ),
        "Add `model: openai/gpt-4o-mini` to the crew file (or `llm:` on the agent), or pass "
        "--model NAME (--model scripted for an offline dry run)",
    ),
    (
        re.compile(r" or pass LLM\('[^']*', api_key=\.\.\.\)"),
        ", or run offline with --model scripted (no key needed)",
    ),
    (
        re.compile(
            r"; to try it offline, use agentensemble\.testing\.ScriptedChatModel as the llm"
        ),
        "",
    ),
    (re.compile(r" Pass them in inputs=\."), ""),
    (re.compile(r"has (review|before_review)=Review\.required\(\.\.\.\)"), r"has `\1: required`"),
    (re.compile(r"review_policy='(\w+)' asks"), r"`review: {policy: \1}` asks"),
    (re.compile(r"the ensemble has no review_handler"), "the crew has no reviewer"),
)


def in_cli_words(message: str) -> str:
    """``message`` with its Python fixes replaced by crew-file or command-line ones."""
    for pattern, fix in _CLI_FIXES:
        message = pattern.sub(fix, message)
    return message


def report_error(args: argparse.Namespace, error: BaseException, code: int) -> int:
    """Say what went wrong on stderr (or as JSON on stdout with ``--json``), in the words of a
    crew file and the command line, secrets redacted; return ``code``."""
    message = in_cli_words(redact_text(str(error)))
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
    # an error line is never data: what would drive a terminal is escaped wherever it goes
    print_out(f"agentensemble: {escape_for_display(message)}", sys.stderr)
    return code


def print_out(text: str, stream: TextIO | None = None) -> None:
    """Print what the CLI shows (results, errors, JSON) through the redaction policy: a secret
    the run met (a provider's echo, a server's URL token) never reaches the terminal or a pipe.
    On a terminal, what would drive it (escape sequences, bidi overrides, hidden characters in a
    model's answer) is shown escaped; a pipe or a file gets the text as it is, another
    program's data."""
    out = stream if stream is not None else sys.stdout
    text = redact_text(text)
    if _is_terminal(out):
        text = escape_for_display(text, encoding=getattr(out, "encoding", None))
    print(text, file=out)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def usage_failure(args: argparse.Namespace, error: BaseException) -> int:
    return report_error(args, error, EXIT_USAGE)


def output_json(output: Any) -> dict[str, Any]:
    """One task's output as JSON-ready data."""
    parsed = output.parsed
    if hasattr(parsed, "model_dump"):
        parsed = _model_json(parsed)
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
        return _model_json(value)
    return value


def _model_json(model: Any) -> Any:
    try:
        return model.model_dump(mode="json")
    except ValueError:  # e.g. a lone surrogate in a dict key: cleaned as when saving outputs
        return jsonable(model)


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
