"""``agentensemble serve``: start the web console (needs the extra ``agentensemble-py[web]``).

It binds 127.0.0.1 unless ``--host`` says otherwise and prints the login address with its token,
once. ``AGENTENSEMBLE_WEB_TOKEN`` sets the token (so another process can know it in advance).
Runs, reviews and sessions are kept in a SQLite file or a Postgres database (``--db PATH`` or
``--db postgresql://...``; by default ``~/.agentensemble/web-console.sqlite3`` or
``$AGENTENSEMBLE_WEB_DB``; ``--db :memory:`` keeps nothing), pruned by ``--keep-days`` and
``--keep-runs``. Named reviewers: ``agentensemble
reviewers``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import sys

from agentensemble._base.dsn import mask_dsn, mask_in
from agentensemble.cli import EXIT_OK, EXIT_USAGE, Command
from agentensemble.cli._options import MAX_COUNT, finite_number, port_number, whole_number

MAX_KEEP_DAYS = 36_500.0
"""A hundred years: more is no retention at all (and past ~1e300 days the cut-off overflows)."""

DEFAULT_PORT = 8766
TOKEN_VARIABLE = "AGENTENSEMBLE_WEB_TOKEN"
DB_VARIABLE = "AGENTENSEMBLE_WEB_DB"


def default_db() -> str:
    """The console's database: ``$AGENTENSEMBLE_WEB_DB`` or
    ``~/.agentensemble/web-console.sqlite3`` (its folder made here: the store makes none, so a
    ``--db`` in a folder that does not exist is an error, not a new folder)."""
    chosen = os.environ.get(DB_VARIABLE)
    if chosen:
        return chosen
    folder = os.path.join(os.path.expanduser("~"), ".agentensemble")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, "web-console.sqlite3")


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=None,
        metavar="PATH_OR_URL",
        help=f"SQLite file or postgresql:// URL keeping runs, reviews and reviewers "
        f"(${DB_VARIABLE} or ~/.agentensemble/web-console.sqlite3; ':memory:' keeps nothing; "
        "Postgres needs the postgres extra)",
    )


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument(
        "--port", type=port_number(), default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})"
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another host name browsers may use to reach the console (repeatable)",
    )
    add_db_argument(parser)
    parser.add_argument(
        "--keep-days",
        type=finite_number("--keep-days", MAX_KEEP_DAYS),
        default=30.0,
        help="forget finished runs after N days (30)",
    )
    parser.add_argument(
        "--keep-runs",
        type=whole_number("--keep-runs", None, MAX_COUNT),
        default=10_000,
        help="keep at most N runs (10000)",
    )


def _run(args: argparse.Namespace) -> int:
    try:
        from agentensemble_web.server import WebConsoleServer
        from agentensemble_web.store import StoreUnavailableError, connect
    except ImportError as exc:
        print(
            f'agentensemble serve needs the web extra: pip install "agentensemble-py[web]" ({exc})',
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.keep_days <= 0 or args.keep_runs <= 0:
        print("agentensemble serve: --keep-days and --keep-runs must be positive", file=sys.stderr)
        return EXIT_USAGE
    db = args.db or default_db()
    try:  # a database that cannot be opened is one line, before anything is served
        connect(db).close()
    except StoreUnavailableError as exc:
        print(f"agentensemble serve: {mask_in(str(exc), db)}", file=sys.stderr)
        return EXIT_USAGE
    except (sqlite3.Error, OSError) as exc:  # a file that is not a database, unreadable
        print(
            f"agentensemble serve: --db {mask_dsn(db)}: cannot be used as the console's "
            f"database ({mask_in(str(exc), db)})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    server = WebConsoleServer(
        args.host,
        args.port,
        token=os.environ.get(TOKEN_VARIABLE) or None,
        allowed_hosts=args.allow_host,
        db=db,
        keep_days=args.keep_days,
        keep_runs=args.keep_runs,
    )
    try:
        server.bind()
    except OSError as exc:
        print(
            f"agentensemble serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr
        )
        return EXIT_USAGE
    if server.is_public:
        print(
            f"warning: {args.host} is reachable from other machines over plain HTTP; "
            "put the console behind TLS before anyone else can reach it",
            file=sys.stderr,
        )
    print("agentensemble web console", flush=True)
    print(f"  open in a browser: {server.login_url}", flush=True)
    print(
        f"  connect an ensemble: WebConsole({server.url!r}, token=...) with the token above "
        f"(or set {TOKEN_VARIABLE})",
        flush=True,
    )
    print(f"  history kept in: {mask_dsn(server.db)}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C while stopping: quietly
        server.serve_forever()
    return EXIT_OK


COMMAND = Command(
    name="serve",
    help="Start the web console: watch runs live and decide reviews in a browser.",
    add_arguments=_add_arguments,
    run=_run,
)
