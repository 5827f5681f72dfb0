"""What ``agentensemble durable`` does: run a worker,
recover a dead worker's runs, list runs and reviews, decide a review.

Imported only when one of those commands runs: it needs the durable extra (DBOS).
"""

from __future__ import annotations

import argparse
import getpass
import importlib
import os
import signal
import sys
import threading
from typing import Any

from agentensemble._base.display import escape_for_row
from agentensemble._base.dsn import mask_dsn, sqlite_file_problem
from agentensemble.cli._common import UsageError, check_output_path, print_out
from agentensemble.durable._client import DurableClient, ReviewClosedError, past_deadline
from agentensemble.durable._database import database_url, sqlite_path
from agentensemble.durable._runtime import DurableRuntime
from agentensemble.errors import ConfigurationError
from agentensemble.logging import LOGGER_NAME, configure_logging
from agentensemble.redaction import redact_text

EXIT_OK, EXIT_USAGE, EXIT_LEASE_LOST = 0, 2, 3


def load_runtime(target: str) -> DurableRuntime:
    """The DurableRuntime of ``module`` or ``module:attribute``, with a clear error if none."""
    module_name, _, attribute = target.partition(":")
    sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigurationError(f"cannot import {module_name!r}: {error}") from error
    if attribute:
        found = getattr(module, attribute, None)
        if not isinstance(found, DurableRuntime):
            raise ConfigurationError(f"{target!r} is not a DurableRuntime")
        return found
    runtimes = [v for v in vars(module).values() if isinstance(v, DurableRuntime)]
    if len(runtimes) != 1:
        raise ConfigurationError(
            f"module {module_name!r} has {len(runtimes)} DurableRuntime objects; name the one "
            "to use as MODULE:ATTRIBUTE"
        )
    return runtimes[0]


def _client(database: str | None) -> DurableClient:
    """A client of the runs' database, which must be a database: a file that is something else
    is one line (exit 2), never the driver's traceback."""
    url = database_url(database)
    path = sqlite_path(url)
    problem = sqlite_file_problem(path) if path is not None else None
    if problem is not None:
        raise ConfigurationError(
            f"the durable database {mask_dsn(url)!r} cannot be read: {problem} (--database or "
            "$AGENTENSEMBLE_DATABASE_URL)"
        )
    return DurableClient(database, prepare=False)


def _worker(target: str) -> int:
    runtime = load_runtime(target)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    runtime.launch()
    print(f"agentensemble worker {runtime.worker_id!r} on {_where(runtime)}", flush=True)
    while not stop.wait(0.2):
        if runtime.liveness.lost:
            print(
                f"agentensemble durable: worker {runtime.worker_id!r} was declared dead by "
                f"another worker (no heartbeat for {runtime.liveness.dead_after} s) and its "
                "runs were taken over; it stopped taking work and exits: start it again",
                file=sys.stderr,
                flush=True,
            )
            runtime.shutdown()
            return EXIT_LEASE_LOST
    runtime.shutdown()
    return EXIT_OK


def _show_warnings() -> None:
    """Takeovers and a lost lease are logged as warnings/errors: show them on stderr, unless
    the application set up the ``agentensemble`` logger itself."""
    import logging

    shown = [
        h for h in logging.getLogger(LOGGER_NAME).handlers if type(h) is not logging.NullHandler
    ]
    if not shown:
        configure_logging("WARNING")


def _recover(target: str, dead: str, force: bool) -> int:
    runtime = load_runtime(target)
    runtime.launch()
    try:
        taken = runtime.recover(dead, force=force)
    except ConfigurationError:
        runtime.shutdown()
        raise
    shown = ", ".join(_shown(run_id) for run_id in taken) or "-"  # ids a submitter chose
    print(f"took over {len(taken)} run(s) of worker {dead!r}: {shown}")
    print(
        "waiting for them to finish (queued runs go back to the queue for any worker)", flush=True
    )
    for run_id in taken:
        runtime.result(run_id)
    runtime.shutdown()
    return EXIT_OK


def _runs(database: str | None, status: str | None) -> int:
    # reads only: launching here would resume live runs, and preparing would create a file
    client = _client(database)
    try:
        for info in client.list_runs(status=status):
            fields = (info.run_id, str(info.ensemble), info.status, str(info.created_at))
            print("\t".join(_shown(field) for field in fields))
    finally:
        client.close()
    return EXIT_OK


def review_row(review: dict[str, Any]) -> str:
    """One pending review as one tab-separated line: id, timing, what is to be approved (the
    tool and its arguments, or the task and its output), the prompt, and whether its deadline
    has passed. Every field is escaped: a newline or tab in a model's text is shown as ``\\n`` /
    ``\\t``, never as a row or column of its own."""
    request = review.get("request")
    request = request if isinstance(request, dict) else {}
    fields = [str(review.get("review_id", "")), str(request.get("timing", ""))]
    if request.get("tool_name"):
        fields += [f"tool: {request['tool_name']}", f"arguments: {request.get('output', '')}"]
    else:
        fields += [
            f"task: {request.get('task_description', '')}",
            f"output: {request.get('output', '')}",
        ]
    if request.get("prompt"):
        fields.append(f"prompt: {request['prompt']}")
    if past_deadline(review):
        fields.append("TIMED OUT: can no longer be decided")
    return "\t".join(_shown(field) for field in fields)


def _reviews(run_id: str, database: str | None) -> int:
    client = _client(database)
    try:
        for review in client.pending_reviews(run_id):
            print(review_row(review))
    finally:
        client.close()
    return EXIT_OK


def _login() -> str | None:
    """The operator's login name, the default "who decided" of a decision from this command."""
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):  # no login name in this environment
        return None


def _decide(args: argparse.Namespace) -> int:
    client = _client(args.database)
    try:
        outcome = client.decide(
            args.run_id,
            args.review_id,
            args.decision,
            revised_output=args.text if args.decision == "edit" else None,
            reason=args.text if args.decision == "exit_early" else None,
            decided_by=args.decided_by or _login(),
        )
    except (ReviewClosedError, ValueError) as error:
        print(f"agentensemble durable: {error}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        client.close()
    if outcome == "queued":
        print(
            f"queued {args.review_id}: {args.decision} (no worker holds run {args.run_id} now; "
            "it applies when a worker resumes the run, and a later decision is refused)"
        )
    else:
        print(f"decided {args.review_id}: {args.decision} (applied)")
    return EXIT_OK


def _steps(args: argparse.Namespace) -> int:
    client = _client(args.database)
    try:
        steps = client.steps(args.run_id, internal=args.all)
    except KeyError as error:
        print(f"agentensemble durable: {error.args[0]}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        client.close()
    for step in steps:
        when = f"{step.started_at:%H:%M:%S.%f}"[:-3] if step.started_at else "-"
        took = f"{step.duration.total_seconds() * 1000:.0f} ms" if step.duration else "-"
        task = f"task {step.task}" if step.task is not None else "run"
        fields = [when, took, task, step.kind, step.name, step.detail, step.output]
        if step.error:
            fields.append(f"error: {step.error}")
        print("\t".join(_shown(field) for field in fields))
    return EXIT_OK


def _trace(args: argparse.Namespace) -> int:
    if args.out:
        try:  # before reading the run, not after it
            check_output_path("--out", args.out)
        except UsageError as error:
            raise ConfigurationError(str(error)) from None
    client = _client(args.database)
    try:
        trace = client.trace(args.run_id)
    finally:
        client.close()
    if args.out:
        try:
            path = trace.save(args.out)
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise ConfigurationError(f"--out: cannot write {args.out!r}: {reason}") from None
        print(f"wrote the trace of {args.run_id} to {path}")
    else:  # a trace holds a model's text: on a terminal, escaped like `run`'s result
        print_out(trace.to_json())
    return EXIT_OK


def _fork(args: argparse.Namespace) -> int:
    inputs = None
    if args.input:
        client = _client(args.database)
        try:
            parent = client.inputs(args.run_id)
        finally:
            client.close()
        inputs = {**parent, **_pairs(args.input)}
    client = _client(args.database)
    try:
        forked = client.fork(
            args.run_id,
            from_task=args.from_task,
            new_run_id=args.new_run_id,
            inputs=inputs,
            edited_output=args.edit_output,
        )
        unserved = client.unserved_queue()
    finally:
        client.close()
    if unserved is not None:  # stderr: stdout stays the one line scripts read
        print(f"note: {unserved}", file=sys.stderr)
    edited = "" if args.edit_output is None else f", task {args.from_task - 1}'s output edited"
    print(
        f"forked {_shown(args.run_id)} from task {args.from_task} as {_shown(forked)}{edited} "
        "(queued for a worker)"
    )
    return EXIT_OK


def _pairs(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name:
            raise ConfigurationError(f"--input {item!r} is not NAME=VALUE")
        pairs[name] = value
    return pairs


def _shown(text: str) -> str:
    """A field of a listing: secrets masked, and never a tab or newline that would fake a row."""
    return escape_for_row(redact_text(text))


def _prune(args: argparse.Namespace) -> int:
    if args.keep_last is None and args.older_than is None:
        print("agentensemble durable prune: say what to keep: --keep-last N, --older-than AGE, "
              "or both", file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    client = _client(args.database)
    try:
        removed = client.prune(
            keep_last=args.keep_last, older_than=args.older_than, ensemble=args.ensemble
        )
    finally:
        client.close()
    print(f"pruned {removed} finished run(s)")
    return EXIT_OK


def _where(runtime: DurableRuntime) -> str:
    return mask_dsn(runtime.database_url)


def dispatch(args: argparse.Namespace) -> int:
    """Do ``args.durable_command``; a configuration problem is one line and exit 2."""
    command = args.durable_command
    if command in ("worker", "recover"):
        _show_warnings()
    try:
        if command == "worker":
            return _worker(args.target)
        if command == "recover":
            return _recover(args.target, args.dead_worker_id, args.force)
        if command == "reviews":
            return _reviews(args.run_id, args.database)
        if command == "decide":
            return _decide(args)
        if command == "steps":
            return _steps(args)
        if command == "trace":
            return _trace(args)
        if command == "fork":
            return _fork(args)
        if command == "prune":
            return _prune(args)
        return _runs(args.database, args.status)
    except ConfigurationError as error:
        print(f"agentensemble durable: {error}", file=sys.stderr)
        return EXIT_USAGE


__all__ = ["dispatch", "load_runtime"]
