"""``agentensemble durable``: durable runs from the command line (extra ``durable``).

    agentensemble durable worker myapp.durable_runs [--worker-id w1]
        [--heartbeat-interval 5] [--dead-after 30]
    agentensemble durable recover myapp.durable_runs DEAD_WORKER_ID [--force]
    agentensemble durable runs [--status PENDING] [--database URL]
    agentensemble durable reviews RUN_ID [--database URL]
    agentensemble durable decide RUN_ID REVIEW_ID continue|edit|exit_early
        [--text TEXT] [--decided-by NAME] [--database URL]
    agentensemble durable steps RUN_ID [--all] [--database URL]
    agentensemble durable trace RUN_ID [--out FILE] [--database URL]
    agentensemble durable fork RUN_ID --from-task N [--new-run-id ID] [--input NAME=VALUE ...]
        [--edit-output TEXT]
        [--database URL]
    agentensemble durable prune [--keep-last N] [--older-than 7d] [--ensemble NAME]
        [--database URL]

``python -m agentensemble durable ...`` takes the same commands. MODULE (or MODULE:ATTRIBUTE) is
the user's module that builds a ``DurableRuntime`` and registers its ensembles; the attribute
defaults to the one DurableRuntime found in the module.

Workers renew a lease in the database every ``--heartbeat-interval`` seconds; a worker silent
for ``--dead-after`` seconds is declared dead and a live worker hands its unfinished runs back
to the queue by itself. ``recover`` does it at once, for a worker you know is dead; it refuses
one whose lease is fresh (alive) unless ``--force``. A worker that finds its own lease taken
(it was paused longer than ``--dead-after``) stops taking work and exits with status 3.
Every command but ``worker`` and ``recover`` only reads and writes the database: none creates a
file.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from datetime import timedelta

from agentensemble.cli import EXIT_USAGE, Command
from agentensemble.cli._options import MAX_COUNT, whole_number

# the durable package's settings (checked equal by the tests; importing it here would import DBOS)
DATABASE_ENV = "AGENTENSEMBLE_DATABASE_URL"
WORKER_ENV = "AGENTENSEMBLE_WORKER_ID"
HEARTBEAT_ENV = "AGENTENSEMBLE_HEARTBEAT_INTERVAL"
DEAD_AFTER_ENV = "AGENTENSEMBLE_DEAD_AFTER"


def add_durable_arguments(parser: argparse.ArgumentParser) -> None:
    """The durable subcommands of ``agentensemble durable``."""
    commands = parser.add_subparsers(dest="durable_command", metavar="COMMAND", required=True)
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
    decide.add_argument(
        "--decided-by",
        metavar="NAME",
        help="who decided, as the trace and the ReviewDecided event show it (default: your login)",
    )
    decide.add_argument("--database", help=f"database URL (default ${DATABASE_ENV})")
    steps = commands.add_parser(
        "steps", help="what a run did, in order: model turns, tool calls, reviews (runs nothing)"
    )
    steps.add_argument("run_id")
    steps.add_argument("--all", action="store_true", help="DBOS's own bookkeeping steps too")
    steps.add_argument("--database", help=f"database URL (default ${DATABASE_ENV})")
    trace = commands.add_parser(
        "trace", help="a finished run's execution trace as JSON, replayed from the database "
        "(runs nothing; open it with ExecutionTrace.from_json or a trace viewer)"
    )  # fmt: skip
    trace.add_argument("run_id")
    trace.add_argument("--out", metavar="FILE", help="write it to FILE instead of stdout")
    trace.add_argument("--database", help=f"database URL (default ${DATABASE_ENV})")
    fork = commands.add_parser(
        "fork", help="a new run reusing a finished run's tasks before --from-task (no model "
        "request, no tool call) and running the rest again, queued for the workers"
    )  # fmt: skip
    fork.add_argument("run_id")
    fork.add_argument(
        "--from-task", type=whole_number("--from-task", None, MAX_COUNT), required=True,
        metavar="N",
        help="the first task to run again (1-based, as steps numbers them)",
    )  # fmt: skip
    fork.add_argument("--new-run-id", help="the fork's id (default: RUN_ID-fork-XXXXXXXX)")
    fork.add_argument(
        "--input", action="append", default=[], metavar="NAME=VALUE",
        help="run again with this input instead of the parent's (repeatable; the other inputs "
        "are the parent's)",
    )  # fmt: skip
    fork.add_argument(
        "--edit-output", metavar="TEXT",
        help="hand TEXT downstream instead of the output of the task before --from-task, as a "
        "reviewer's edit would (its steps are still reused)",
    )  # fmt: skip
    fork.add_argument("--database", help=f"database URL (default ${DATABASE_ENV})")
    prune = commands.add_parser(
        "prune", help="delete finished runs by age and by count per ensemble (never running, "
        "queued or waiting ones)"
    )  # fmt: skip
    prune.add_argument(
        "--keep-last",
        type=whole_number("--keep-last", None, MAX_COUNT),
        metavar="N",
        help="keep the newest N per ensemble",
    )
    prune.add_argument(
        "--older-than", type=duration, metavar="AGE", help="delete runs older than AGE (7d, 12h)"
    )
    prune.add_argument("--ensemble", help="only this registered ensemble's runs")
    prune.add_argument("--database", help=f"database URL (default ${DATABASE_ENV})")


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(text: str) -> timedelta:
    """``7d``, ``12h``, ``30m``, ``90s``, ``2w`` or plain seconds, as a timedelta."""
    number, unit = (text[:-1], text[-1].lower()) if text[-1:].isalpha() else (text, "s")
    try:
        seconds = float(number) * _UNITS[unit]
    except (KeyError, ValueError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an age: use a number with s, m, h, d or w (7d, 12h)"
        ) from None
    if not seconds > 0:  # also NaN
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive age")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:  # over 999,999,999 days (inf too)
        raise argparse.ArgumentTypeError(
            f"{text!r} is too long an age: at most {timedelta.max.days} days"
        ) from None


def run_durable(args: argparse.Namespace) -> int:
    """Set the worker's environment from the options, then do the command."""
    command = args.durable_command
    if command == "recover":
        # never the dead worker's id nor a live worker's (from the environment): launching under
        # a worker's id resumes that worker's runs, which would then run twice
        args.worker_id = args.worker_id or f"recover-{uuid.uuid4().hex[:12]}"
        if args.worker_id == args.dead_worker_id:
            print("agentensemble durable: --worker-id must differ from the dead worker's id",
                  file=sys.stderr)  # fmt: skip
            return EXIT_USAGE
    if getattr(args, "worker_id", None):
        os.environ[WORKER_ENV] = args.worker_id
    for option, env in (("heartbeat_interval", HEARTBEAT_ENV), ("dead_after", DEAD_AFTER_ENV)):
        if getattr(args, option, None) is not None:  # read by DurableRuntime() at import
            os.environ[env] = str(getattr(args, option))
    try:
        from agentensemble.cli import _durable_actions as actions
    except ImportError as error:
        print(
            "agentensemble durable needs the durable extra: "
            f"pip install 'agentensemble-py[durable]' ({error})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return actions.dispatch(args)


COMMAND = Command(
    name="durable",
    help="durable runs: run a worker, recover a dead worker's runs, list runs and reviews, "
    "decide a review, list a run's steps, fork a run, prune old runs (extra durable)",
    add_arguments=add_durable_arguments,
    run=run_durable,
)

__all__ = ["COMMAND", "add_durable_arguments", "duration", "run_durable"]
