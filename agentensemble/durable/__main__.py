"""``python -m agentensemble.durable``: run a worker, list runs, decide reviews.

    python -m agentensemble.durable worker myapp.durable_runs [--worker-id w1]
        [--heartbeat-interval 5] [--dead-after 30]
    python -m agentensemble.durable recover myapp.durable_runs DEAD_WORKER_ID [--force]
    python -m agentensemble.durable runs [--status PENDING] [--database URL]
    python -m agentensemble.durable reviews RUN_ID [--database URL]
    python -m agentensemble.durable decide RUN_ID REVIEW_ID continue|edit|exit_early
        [--text TEXT] [--database URL]

MODULE (or MODULE:ATTRIBUTE) is the user's module that builds a ``DurableRuntime`` and registers
its ensembles; the attribute defaults to the one DurableRuntime found in the module.

Workers renew a lease in the database every ``--heartbeat-interval`` seconds; a worker silent
for ``--dead-after`` seconds is declared dead and a live worker hands its unfinished runs back
to the queue by itself. ``recover`` does it at once, for a worker you know is dead; it refuses
one whose lease is fresh (alive) unless ``--force``. A worker that finds its own lease taken
(it was paused longer than ``--dead-after``) stops taking work and exits with status 3.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from agentensemble._display import escape_for_row
from agentensemble.durable._client import DurableClient, ReviewClosedError, past_deadline
from agentensemble.durable._liveness import DEAD_AFTER_ENV, HEARTBEAT_ENV
from agentensemble.durable._runtime import DATABASE_ENV, WORKER_ENV, DurableRuntime
from agentensemble.errors import ConfigurationError
from agentensemble.logging import LOGGER_NAME, configure_logging

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
                f"agentensemble.durable: worker {runtime.worker_id!r} was declared dead by "
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
    print(f"took over {len(taken)} run(s) of worker {dead!r}: {', '.join(taken) or '-'}")
    print(
        "waiting for them to finish (queued runs go back to the queue for any worker)", flush=True
    )
    for run_id in taken:
        runtime.result(run_id)
    runtime.shutdown()
    return EXIT_OK


def _runs(database: str | None, status: str | None) -> int:
    client = DurableClient(database)  # reads only: launching here would resume live runs
    try:
        for info in client.list_runs(status=status):
            print(f"{info.run_id}\t{info.ensemble}\t{info.status}\t{info.created_at}")
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
    return "\t".join(escape_for_row(field) for field in fields)


def _reviews(run_id: str, database: str | None) -> int:
    client = DurableClient(database)
    try:
        for review in client.pending_reviews(run_id):
            print(review_row(review))
    finally:
        client.close()
    return EXIT_OK


def _decide(args: argparse.Namespace) -> int:
    client = DurableClient(args.database)
    try:
        client.decide(
            args.run_id,
            args.review_id,
            args.decision,
            revised_output=args.text if args.decision == "edit" else None,
            reason=args.text if args.decision == "exit_early" else None,
        )
    except (ReviewClosedError, ValueError) as error:
        print(f"agentensemble.durable: {error}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        client.close()
    print(f"decided {args.review_id}: {args.decision}")
    return EXIT_OK


def _where(runtime: DurableRuntime) -> str:
    url = runtime.database_url
    return url.split("@")[-1] if "@" in url else url


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentensemble.durable")
    commands = parser.add_subparsers(dest="command", required=True)
    worker = commands.add_parser("worker", help="run queued and interrupted runs until stopped")
    worker.add_argument("target", help="MODULE or MODULE:ATTRIBUTE holding the DurableRuntime")
    worker.add_argument("--worker-id", help=f"this worker's stable id (or ${WORKER_ENV})")
    worker.add_argument(
        "--heartbeat-interval",
        type=float,
        help=f"seconds between lease renewals (default 5, or ${HEARTBEAT_ENV})",
    )
    worker.add_argument(
        "--dead-after",
        type=float,
        help="seconds without a heartbeat after which a worker is dead and its runs are taken "
        f"over (default 30, or ${DEAD_AFTER_ENV})",
    )
    recover = commands.add_parser(
        "recover", help="hand a dead worker's runs back to the queue now (live workers do it "
        "by themselves after --dead-after)"
    )  # fmt: skip
    recover.add_argument("target")
    recover.add_argument("dead_worker_id")
    recover.add_argument("--worker-id", help="this process's own id (default: a fresh one)")
    recover.add_argument(
        "--force", action="store_true", help="recover even if the worker's lease is fresh"
    )
    runs = commands.add_parser("runs", help="list runs, newest first")
    runs.add_argument("--status")
    runs.add_argument("--database", help=f"database URL (default ${DATABASE_ENV})")
    reviews = commands.add_parser("reviews", help="list a run's pending reviews")
    reviews.add_argument("run_id")
    reviews.add_argument("--database", help=f"database URL (default ${DATABASE_ENV})")
    decide = commands.add_parser("decide", help="decide a pending review")
    decide.add_argument("run_id")
    decide.add_argument("review_id")
    decide.add_argument("decision", choices=("continue", "edit", "exit_early"))
    decide.add_argument("--text", help="the revised output (edit) or the reason (exit_early)")
    decide.add_argument("--database", help=f"database URL (default ${DATABASE_ENV})")
    args = parser.parse_args(argv)
    if args.command == "recover":
        # never the dead worker's id nor a live worker's (from the environment): launching under
        # a worker's id resumes that worker's runs, which would then run twice
        args.worker_id = args.worker_id or f"recover-{uuid.uuid4().hex[:12]}"
        if args.worker_id == args.dead_worker_id:
            print(
                "agentensemble.durable: --worker-id must differ from the dead worker's id",
                file=sys.stderr,
            )
            return EXIT_USAGE
    if getattr(args, "worker_id", None):
        os.environ[WORKER_ENV] = args.worker_id
    for option, env in (("heartbeat_interval", HEARTBEAT_ENV), ("dead_after", DEAD_AFTER_ENV)):
        if getattr(args, option, None) is not None:  # read by DurableRuntime() at import
            os.environ[env] = str(getattr(args, option))
    if args.command in ("worker", "recover"):
        _show_warnings()
    try:
        if args.command == "worker":
            return _worker(args.target)
        if args.command == "recover":
            return _recover(args.target, args.dead_worker_id, args.force)
        if args.command == "reviews":
            return _reviews(args.run_id, args.database)
        if args.command == "decide":
            return _decide(args)
        return _runs(args.database, args.status)
    except ConfigurationError as error:
        print(f"agentensemble.durable: {error}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
