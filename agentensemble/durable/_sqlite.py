"""SQLite as a durable runs' database: WAL mode, and how hard each commit waits for the disk.

DBOS opens SQLite with a rollback journal and ``synchronous=FULL``: every step's commit waits for
several fsyncs, about 30 ms a turn on a local disk. In WAL mode (kept by the file) a commit
waits for one; with ``synchronous=NORMAL`` (per connection) it waits for none, and the WAL is
synced at checkpoints instead. Either way a checkpoint survives the process being killed (the
crash durable runs are built for); what ``normal`` gives up is the last commits when the
*machine* loses power, whose steps then run again (benchmarks/RESULTS.md, "Durable runs").
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from typing import Any, Literal

from agentensemble.durable._database import sqlite_path
from agentensemble.errors import ConfigurationError

SqliteSync = Literal["normal", "full"]
_PRAGMA = {"normal": "NORMAL", "full": "FULL"}

# database file (real path) -> its synchronous setting, for the connections DBOS opens
_tuned: dict[str, str] = {}
_lock = threading.Lock()
_listening = False


def prepare_sqlite(url: str, sync: str) -> None:
    """Put the file in WAL mode before DBOS opens it, and set ``sync`` on every connection
    opened to it in this process."""
    if sync not in _PRAGMA:
        raise ConfigurationError(f"sqlite_sync must be 'normal' or 'full', got {sync!r}")
    path = sqlite_path(url)
    if path is None:
        return
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA journal_mode=WAL")
    with _lock:
        _tuned[os.path.realpath(path)] = _PRAGMA[sync]
        _listen()


def _listen() -> None:
    global _listening
    if _listening:
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    event.listen(Engine, "connect", _on_connect)
    _listening = True


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    if not isinstance(dbapi_connection, sqlite3.Connection) or not _tuned:
        return
    files = dbapi_connection.execute("PRAGMA database_list").fetchall()
    main = next((row[2] for row in files if row[1] == "main"), "")
    setting = _tuned.get(os.path.realpath(main)) if main else None
    if setting is not None:
        dbapi_connection.execute(f"PRAGMA synchronous={setting}")


__all__ = ["SqliteSync", "prepare_sqlite", "sqlite_path"]
