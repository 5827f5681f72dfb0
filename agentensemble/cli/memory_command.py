"""``agentensemble memory list|search|prune|clear``: a person inspecting and trimming a store.

``--store`` is a SQLite file (never created by this command) or a ``postgresql://`` URL;
default ``$AGENTENSEMBLE_MEMORY`` or ``agentensemble-memory.sqlite``. Stored text is shown on
one line, control characters escaped (a stored entry cannot drive the terminal) and secrets
redacted once more.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from agentensemble.cli import EXIT_FAILED, EXIT_OK, Command
from agentensemble.cli._common import UsageError, report_error, usage_failure
from agentensemble.cli._options import MAX_COUNT, whole_number

STORE_ENV = "AGENTENSEMBLE_MEMORY"
DEFAULT_STORE = "agentensemble-memory.sqlite"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
SHOWN_CHARS = 200


def duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``45m``, ``90s``, ``2w`` as a timedelta."""
    match = _DURATION.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is no duration; write a number and a unit: 90s, 45m, 12h, 30d, 2w"
        )
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def open_store(location: str | None) -> Any:
    """The store at ``location``; a missing SQLite file is a usage error, not a new file."""
    where = location or os.environ.get(STORE_ENV) or DEFAULT_STORE
    if where.startswith(("postgresql://", "postgres://")):
        from agentensemble.memory.postgres import PostgresMemory

        return PostgresMemory(where)
    if not Path(where).expanduser().is_file():
        raise UsageError(f"no memory store at {where!r} (pass --store PATH or a postgresql:// URL)")
    from agentensemble.memory.sqlite import SQLiteMemory

    return SQLiteMemory(where)


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    from agentensemble.logging import redact_text

    one_line = _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode(), text)
    one_line = redact_text(one_line)
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _entry(entry: Any) -> dict[str, Any]:
    return {
        "id": entry.id,
        "scope": entry.scope,
        "created_at": entry.created_at.isoformat(),
        "score": entry.score,
        "text": shown(entry.text, 10_000),
        "metadata": json.loads(shown(json.dumps(entry.metadata), 10_000)),
    }


def _print_entries(entries: list[Any], as_json: bool, nothing: str) -> None:
    """The entries, one a line (or as JSON: ``[]``); ``nothing`` said when there are none, so
    an empty answer is not mistaken for a command that did nothing."""
    if as_json:
        print(json.dumps([_entry(e) for e in entries], indent=2, ensure_ascii=False))
        return
    if not entries:
        print(nothing)
    for entry in entries:
        score = f"  score {entry.score:.3f}" if entry.score is not None else ""
        stamp = entry.created_at.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{entry.id}  {stamp}{score}  {shown(entry.text)}")


def run(args: argparse.Namespace) -> int:
    try:
        store = open_store(args.store)
    except (UsageError, ValueError) as error:
        return usage_failure(args, error)
    except OSError as error:  # not a database, Postgres unreachable: the --store given
        return usage_failure(args, error)  # exit 2, as durable, serve and reviewers say
    try:
        return _act(store, args)
    except ValueError as error:
        return usage_failure(args, error)
    except BrokenPipeError:  # the reader went away (| head): cli.main ends quietly
        raise
    except OSError as error:
        return report_error(args, error, EXIT_FAILED)
    finally:
        store.close()


def _act(store: Any, args: argparse.Namespace) -> int:
    action = args.action
    if action == "list" and args.scope is None:
        scopes = store.scopes()
        if args.json:
            print(json.dumps([{"scope": s, "entries": n} for s, n in scopes], indent=2))
        else:
            for scope, count in scopes:
                print(f"{shown(scope)}  {count} entries")
        return EXIT_OK
    if action == "list":
        from agentensemble.memory.store import recent_entries

        entries = recent_entries(store, args.scope, args.last) if args.last else None
        entries = store.entries(args.scope) if entries is None else entries
        _print_entries(entries, args.json, f"no entries in scope {shown(args.scope)!r}")
    elif action == "search":
        found = store.search(args.scope, args.query, limit=args.limit)
        nothing = f"nothing in scope {shown(args.scope)!r} matches {shown(args.query)!r}"
        _print_entries(found, args.json, nothing)
    elif action == "prune":
        if args.keep_last is None and args.older_than is None:
            raise UsageError("prune needs --keep-last N, --older-than DURATION or both")
        removed = store.prune(args.scope, keep_last=args.keep_last, older_than=args.older_than)
        _say(args, {"scope": args.scope, "removed": removed}, f"removed {removed} entries")
    elif action == "clear":
        if not args.yes:
            raise UsageError(f"clear removes every entry of {args.scope!r}; add --yes to confirm")
        removed = store.clear(args.scope)
        _say(args, {"scope": args.scope, "removed": removed}, f"removed {removed} entries")
    return EXIT_OK


def _say(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    print(json.dumps(payload) if args.json else text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        help=f"SQLite file or postgresql:// URL (default ${STORE_ENV} or {DEFAULT_STORE})",
    )
    common.add_argument("--json", action="store_true", help="print JSON")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser(
        "list", parents=[common], help="scopes with their sizes, or one scope's entries"
    )
    listing.add_argument("scope", nargs="?", help="show this scope's entries, oldest first")
    listing.add_argument(
        "--last",
        type=whole_number("--last", None, MAX_COUNT),
        default=0,
        help="only the newest N entries",
    )
    search = actions.add_parser("search", parents=[common], help="best matches, best first")
    search.add_argument("scope")
    search.add_argument("query")
    search.add_argument("--limit", type=whole_number("--limit", None, MAX_COUNT), default=5)
    prune = actions.add_parser("prune", parents=[common], help="remove old entries")
    prune.add_argument("scope")
    prune.add_argument(
        "--keep-last",
        type=whole_number("--keep-last", None, MAX_COUNT),
        help="keep the newest N entries",
    )
    prune.add_argument("--older-than", type=duration, help="remove entries older than 30d, 12h")
    clear = actions.add_parser("clear", parents=[common], help="remove every entry of a scope")
    clear.add_argument("scope")
    clear.add_argument("--yes", action="store_true", help="confirm")


def _run_checked(args: argparse.Namespace) -> int:
    try:
        return run(args)
    except UsageError as error:
        return usage_failure(args, error)


COMMAND = Command(
    name="memory",
    help="inspect and trim a memory store: list, search, prune, clear",
    add_arguments=add_arguments,
    run=_run_checked,
)

__all__ = ["COMMAND", "duration"]
