"""Named reviewers: a login token per person, so every decision records who made it.

``agentensemble reviewers add alice --db PATH`` prints alice's token once (the database keeps
only its SHA-256); she logs in with ``/login?token=...`` and her decisions say ``alice``.
``revoke`` ends her access at once, her open pages included. The console's own token still
logs in (as ``console``) for whoever started it.
"""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from typing import Any

from agentensemble_web._db import Database
from agentensemble_web.store import connect, digest

RESERVED = frozenset({"api", "console"})
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


class ReviewerError(ValueError):
    """A reviewer that cannot be added or revoked, and why."""


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name) or name.lower() in RESERVED:
        raise ReviewerError(
            f"invalid reviewer name {name!r}: 1-64 letters, digits, '.', '_', '@' or '-', "
            f"starting with a letter or digit, and not one of {sorted(RESERVED)}"
        )
    return name


def add_reviewer(path: str | Path, name: str) -> str:
    """Add ``name`` and return their new login token (shown once, stored as a digest)."""
    check_name(name)
    token = secrets.token_urlsafe(24)
    conn = connect(path)
    try:
        with conn.transaction():
            row = conn.execute(
                "SELECT revoked_at FROM reviewers WHERE name = ?", (name,)
            ).fetchone()
            if row is not None and row[0] is None:
                raise ReviewerError(f"reviewer {name!r} already exists (revoke them first)")
            conn.execute(
                "INSERT INTO reviewers (name, token_sha256, created_at, revoked_at) "
                "VALUES (?, ?, ?, NULL) ON CONFLICT (name) DO UPDATE SET "
                "token_sha256 = excluded.token_sha256, created_at = excluded.created_at, "
                "revoked_at = NULL",
                (name, digest(token), time.time()),
            )
    finally:
        conn.close()
    return token


def list_reviewers(path: str | Path) -> list[dict[str, Any]]:
    """Every reviewer: name, when added, when revoked (or None)."""
    conn = connect(path)
    try:
        rows = conn.all("SELECT name, created_at, revoked_at FROM reviewers ORDER BY name")
    finally:
        conn.close()
    return [{"name": r[0], "created_at": r[1], "revoked_at": r[2]} for r in rows]


def revoke_reviewer(path: str | Path, name: str) -> None:
    """End ``name``'s access (new logins and open sessions)."""
    conn = connect(path)
    try:
        with conn.transaction():
            done = conn.execute(
                "UPDATE reviewers SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL",
                (time.time(), name),
            )
        if done.rowcount == 0:
            raise ReviewerError(f"no active reviewer named {name!r}")
    finally:
        conn.close()


class ReviewerBook:
    """The console's view of the reviewers table (on the server's loop)."""

    def __init__(self, conn: Database) -> None:
        self._conn = conn

    def who(self, token: str) -> str | None:
        """The active reviewer this login token names, or None."""
        row = self._conn.one(
            "SELECT name FROM reviewers WHERE token_sha256 = ? AND revoked_at IS NULL",
            (digest(token),),
        )
        return str(row[0]) if row else None

    def revoked(self, name: str, since: float) -> bool:
        """Whether a session of ``name`` started at ``since`` has lost its access: the reviewer
        is gone or revoked, or was added again after the session started (a new token for the
        same name must not bring back the sessions its revocation ended)."""
        row = self._conn.one("SELECT created_at, revoked_at FROM reviewers WHERE name = ?", (name,))
        return row is None or row[1] is not None or float(row[0]) > since


__all__ = [
    "ReviewerBook",
    "ReviewerError",
    "add_reviewer",
    "check_name",
    "list_reviewers",
    "revoke_reviewer",
]
