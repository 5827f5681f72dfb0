"""The console's memory on disk: runs, their events, reviews, sessions and named reviewers.

One SQLite file (stdlib ``sqlite3``, WAL), so history survives a restart of the console:
``agentensemble serve --db PATH`` (``:memory:`` keeps nothing); or a Postgres database shared by
a team's consoles, ``--db postgresql://...`` (the ``postgres`` extra; same tables, same
retention; see ``_db``). Retention is by age
(``keep_days``) and by count (``keep_runs``): older finished runs, their events and their
decided reviews are deleted when the console starts and as new runs arrive. Written on the
server's event loop only (a write is an indexed insert; a batch of events is one commit).

Secrets are kept as SHA-256 digests only (reviewer tokens, session ids and keys), so the file
never holds a credential that logs anyone in.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from agentensemble_web._db import MEMORY, Database, StoreUnavailableError, open_database

_ALL = 2**62
"""A LIMIT that keeps every row (SQLite needs a LIMIT before an OFFSET)."""
DEFAULT_KEEP_DAYS = 30.0
DEFAULT_KEEP_RUNS = 10_000
PAGE_SIZE_MAX = 200

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, started_at REAL NOT NULL, ended_at REAL, status TEXT NOT NULL,
    search TEXT NOT NULL DEFAULT '', summary TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at DESC);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS reviews (
    id TEXT PRIMARY KEY, run_id TEXT, created_at REAL NOT NULL, status TEXT NOT NULL,
    decided_at REAL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS reviews_decided ON reviews (decided_at DESC);
CREATE TABLE IF NOT EXISTS reviewers (
    name TEXT PRIMARY KEY, token_sha256 TEXT NOT NULL UNIQUE, created_at REAL NOT NULL,
    revoked_at REAL);
CREATE TABLE IF NOT EXISTS sessions (
    id_sha256 TEXT PRIMARY KEY, key_sha256 TEXT NOT NULL, csrf TEXT NOT NULL,
    reviewer TEXT NOT NULL, created_at REAL NOT NULL);
"""


def digest(secret: str) -> str:
    """The SHA-256 of ``secret`` (hex): what the store keeps instead of the secret."""
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


def connect(path: str | Path) -> Database:
    """A connection to the console's database (a SQLite path or a Postgres URL), its tables
    created; ``StoreUnavailableError`` when it cannot be opened."""
    return open_database(path, _SCHEMA)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


class Store:
    """Runs, events, reviews and sessions of one console (see the module docstring)."""

    def __init__(
        self,
        path: str | Path = MEMORY,
        *,
        keep_days: float = DEFAULT_KEEP_DAYS,
        keep_runs: int = DEFAULT_KEEP_RUNS,
    ) -> None:
        if keep_days <= 0 or keep_runs <= 0:
            raise ValueError("keep_days and keep_runs must be positive")
        self.path = str(path)
        self.keep_days = keep_days
        self.keep_runs = keep_runs
        self._conn = connect(path)
        self._new_runs = 0
        self.prune()

    @property
    def connection(self) -> Database:
        return self._conn

    def close(self) -> None:
        self._conn.close()

    def commit(self) -> None:
        self._conn.commit()

    # ---- runs and events -------------------------------------------------------------------

    def save_run(self, summary: dict[str, Any], search: str) -> None:
        self._conn.execute(
            "INSERT INTO runs (run_id, started_at, ended_at, status, search, summary) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
            "ended_at = excluded.ended_at, status = excluded.status, search = excluded.search, "
            "summary = excluded.summary",
            (
                summary["run_id"],
                summary["started_at"],
                summary["ended_at"],
                summary["status"],
                search.lower(),
                _dumps(summary),
            ),
        )

    def new_run(self) -> None:
        """A run was created: prune now and then, so retention holds while serving."""
        self._new_runs += 1
        if self._new_runs % 100 == 0:
            self.prune()

    def add_event(self, run_id: str, seq: int, event: dict[str, Any]) -> None:
        self._conn.execute(
            "INSERT INTO events (run_id, seq, body) VALUES (?, ?, ?) "
            "ON CONFLICT (run_id, seq) DO UPDATE SET body = excluded.body",
            (run_id, seq, _dumps(event)),
        )

    def runs(
        self, *, limit: int = 50, offset: int = 0, query: str = "", status: str = ""
    ) -> tuple[list[dict[str, Any]], int]:
        """A page of run summaries, newest first, and how many match in all."""
        where, args = ["1 = 1"], []
        if query:
            where.append("search LIKE ? ESCAPE '\\'")
            escaped = query.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            args.append(f"%{escaped}%")
        if status:
            where.append("status = ?")
            args.append(status)
        clause = " AND ".join(where)
        total = self._conn.one(f"SELECT COUNT(*) FROM runs WHERE {clause}", args)[0]
        rows = self._conn.all(
            f"SELECT summary FROM runs WHERE {clause} ORDER BY started_at DESC LIMIT ? OFFSET ?",
            [*args, max(1, min(limit, PAGE_SIZE_MAX)), max(0, offset)],
        )
        return [json.loads(row[0]) for row in rows], int(total)

    def run(self, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """A run's summary and its events, or None."""
        row = self._conn.one("SELECT summary FROM runs WHERE run_id = ?", (run_id,))
        if row is None:
            return None
        events = self._conn.all("SELECT body FROM events WHERE run_id = ? ORDER BY seq", (run_id,))
        return json.loads(row[0]), [json.loads(e[0]) for e in events]

    # ---- reviews ---------------------------------------------------------------------------

    def save_review(self, view: dict[str, Any]) -> None:
        decision = view.get("decision") or {}
        decided_at = decision.get("decided_at") if view["status"] == "decided" else None
        if view["status"] == "expired":
            decided_at = view.get("deadline") or time.time()
        self._conn.execute(
            "INSERT INTO reviews (id, run_id, created_at, status, decided_at, body) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET run_id = excluded.run_id, "
            "created_at = excluded.created_at, status = excluded.status, "
            "decided_at = excluded.decided_at, body = excluded.body",
            (
                view["id"],
                view["run_id"],
                view["created_at"],
                view["status"],
                decided_at,
                _dumps(view),
            ),
        )
        self._conn.commit()

    def reviews(self, limit: int = 1_000) -> list[dict[str, Any]]:
        """The most recent reviews (pending ones first), oldest first."""
        rows = self._conn.all(
            "SELECT body FROM reviews ORDER BY status = 'pending' DESC, created_at DESC LIMIT ?",
            (limit,),
        )
        return sorted((json.loads(r[0]) for r in rows), key=lambda v: v["created_at"])

    def decisions(self, *, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        """Decided and expired reviews, the most recent first: the audit list."""
        rows = self._conn.all(
            "SELECT body FROM reviews WHERE status != 'pending' "
            "ORDER BY decided_at DESC LIMIT ? OFFSET ?",
            (max(1, min(limit, PAGE_SIZE_MAX)), max(0, offset)),
        )
        return [json.loads(r[0]) for r in rows]

    # ---- sessions --------------------------------------------------------------------------

    def save_session(
        self, session_id: str, key: str, csrf: str, reviewer: str, created: float
    ) -> None:
        self._conn.execute(
            "INSERT INTO sessions (id_sha256, key_sha256, csrf, reviewer, created_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id_sha256) DO UPDATE SET "
            "key_sha256 = excluded.key_sha256, csrf = excluded.csrf, "
            "reviewer = excluded.reviewer, created_at = excluded.created_at",
            (digest(session_id), digest(key), csrf, reviewer, created),
        )
        self._conn.commit()

    def session(self, session_id: str) -> tuple[str, str, str, float] | None:
        """``(key digest, csrf, reviewer, created)`` of a stored session, or None."""
        row = self._conn.one(
            "SELECT key_sha256, csrf, reviewer, created_at FROM sessions WHERE id_sha256 = ?",
            (digest(session_id),),
        )
        return (row[0], row[1], row[2], float(row[3])) if row else None

    def forget_sessions(self, older_than: float) -> None:
        self._conn.execute("DELETE FROM sessions WHERE created_at < ?", (older_than,))
        self._conn.commit()

    # ---- retention -------------------------------------------------------------------------

    def prune(self) -> None:
        """Delete finished runs beyond ``keep_runs`` or older than ``keep_days``, with their
        events and decided reviews."""
        cutoff = time.time() - self.keep_days * 86_400
        c = self._conn
        old = {
            r[0]
            for r in c.all(
                "SELECT run_id FROM runs WHERE ended_at IS NOT NULL AND started_at < ?", (cutoff,)
            )
        }
        old |= {
            r[0]
            for r in c.all(
                "SELECT run_id FROM runs ORDER BY started_at DESC LIMIT ? OFFSET ?",
                (_ALL, self.keep_runs),
            )
        }
        for run_id in old:
            c.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
            c.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        c.execute("DELETE FROM reviews WHERE status != 'pending' AND created_at < ?", (cutoff,))
        c.commit()


__all__ = [
    "DEFAULT_KEEP_DAYS",
    "DEFAULT_KEEP_RUNS",
    "MEMORY",
    "Store",
    "StoreUnavailableError",
    "connect",
    "digest",
]
