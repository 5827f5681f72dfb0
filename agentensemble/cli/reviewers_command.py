"""``agentensemble reviewers add|list|revoke``: named reviewers of the web console.

Each reviewer gets their own login token (printed once by ``add``; the database keeps only its
digest), so every decision in the console records who made it. ``--db`` is the same file
``agentensemble serve`` uses.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from datetime import datetime

from agentensemble._base.dsn import mask_dsn, mask_in
from agentensemble.cli import EXIT_OK, EXIT_USAGE, Command
from agentensemble.cli.serve_command import add_db_argument, default_db


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="add a reviewer and print their login token (once)")
    add.add_argument("name", help="the reviewer's name, shown on every decision they make")
    add_db_argument(add)
    listing = actions.add_parser("list", help="list the reviewers")
    add_db_argument(listing)
    revoke = actions.add_parser("revoke", help="end a reviewer's access (open pages included)")
    revoke.add_argument("name")
    add_db_argument(revoke)


def _when(stamp: float | None) -> str:
    return "-" if stamp is None else datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")


def _run(args: argparse.Namespace) -> int:
    try:
        from agentensemble_web.reviewers import (
            ReviewerError,
            add_reviewer,
            list_reviewers,
            revoke_reviewer,
        )
        from agentensemble_web.store import StoreUnavailableError
    except ImportError as exc:
        print(
            "agentensemble reviewers needs the web extra: "
            f"pip install 'agentensemble-py[web]' ({exc})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    db = args.db or default_db()
    if db == ":memory:":
        print("agentensemble reviewers: --db must be the file the console uses", file=sys.stderr)
        return EXIT_USAGE
    is_url = db.startswith(("postgresql://", "postgres://"))
    if args.action != "add" and not is_url and not os.path.exists(db):
        # listing or revoking creates nothing: a typo must not look like "no reviewers yet"
        print(
            f"agentensemble reviewers: no console database at {db!r}: check --db (the file "
            "agentensemble serve uses)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        if args.action == "add":
            token = add_reviewer(db, args.name)
            print(f"reviewer {args.name} added; their login token (shown once):")
            print(f"  {token}")
            print("they log in at <console url>/login?token=<token>")
        elif args.action == "revoke":
            revoke_reviewer(db, args.name)
            print(f"reviewer {args.name} revoked")
        else:
            rows = list_reviewers(db)
            if not rows:
                print("no reviewers yet: agentensemble reviewers add NAME")
            for row in rows:
                state = "revoked " + _when(row["revoked_at"]) if row["revoked_at"] else "active"
                print(f"{row['name']:<24} added {_when(row['created_at'])}  {state}")
    except (ReviewerError, StoreUnavailableError) as exc:
        print(f"agentensemble reviewers: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (sqlite3.Error, OSError) as exc:  # a file that is not a database, a folder
        print(
            f"agentensemble reviewers: --db {mask_dsn(db)}: cannot be used as the console's "
            f"database ({mask_in(str(exc), db)})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return EXIT_OK


COMMAND = Command(
    name="reviewers",
    help="Named reviewers of the web console: add (prints a token), list, revoke.",
    add_arguments=_add_arguments,
    run=_run,
)
