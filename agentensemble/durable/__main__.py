"""``python -m agentensemble.durable``: run a worker, take over a dead worker's runs, list runs.

    python -m agentensemble.durable worker myapp.durable_runs [--worker-id w1]
    python -m agentensemble.durable recover myapp.durable_runs DEAD_WORKER_ID
    python -m agentensemble.durable runs [--status PENDING] [--database URL]
    python -m agentensemble.durable reviews RUN_ID [--database URL]
    python -m agentensemble.durable decide RUN_ID REVIEW_ID continue|edit|exit_early
        [--text TEXT] [--database URL]

MODULE (or MODULE:ATTRIBUTE) is the user's module that builds a ``DurableRuntime`` and registers
its ensembles; the attribute defaults to the one DurableRuntime found in the module.
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

from agentensemble._display import escape_for_display
from agentensemble.durable._client import DurableClient, ReviewClosedError
from agentensemble.durable._runtime import DATABASE_ENV, WORKER_ENV, DurableRuntime
from agentensemble.errors import ConfigurationError

EXIT_OK, EXIT_USAGE = 0, 2


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
    stop.wait()
    runtime.shutdown()
    return EXIT_OK


def _recover(target: str, dead: str) -> int:
    runtime = load_runtime(target)
    runtime.launch()
    taken = runtime.recover(dead)
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


def _reviews(run_id: str, database: str | None) -> int:
    client = DurableClient(database)
    try:
        for review in client.pending_reviews(run_id):
            request = review["request"]
            shown = escape_for_display(str(request.get("output", "")))
            print(f"{review['review_id']}\t{request.get('timing')}\t{shown}")
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
    recover = commands.add_parser("recover", help="take over the runs of a dead worker")
    recover.add_argument("target")
    recover.add_argument("dead_worker_id")
    recover.add_argument("--worker-id", help="this process's own id (default: a fresh one)")
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
    try:
        if args.command == "worker":
            return _worker(args.target)
        if args.command == "recover":
            return _recover(args.target, args.dead_worker_id)
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
