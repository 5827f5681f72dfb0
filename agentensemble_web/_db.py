"""The console's database connection: a SQLite file, or Postgres for a team's shared console.

``open_database(target, schema)`` opens ``target``, a SQLite path (``:memory:`` keeps nothing) or
a ``postgresql://`` URL (psycopg 3, the ``postgres`` extra, imported only then), and creates the
tables. The store writes one SQL for both: ``?`` placeholders (``%s`` for Postgres),
``INSERT ... ON CONFLICT`` upserts, ``REAL`` columns (``DOUBLE PRECISION`` in Postgres, so
timestamps keep their precision). A database that cannot be opened is a ``StoreUnavailableError``
whose message names it without its password. A Postgres connection that breaks (the server
restarted, an administrator ended it) is opened again on the next statement, which is retried
once; the writes of the transaction that broke (at most one batch of events) are lost.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentensemble._base.dsn import mask_dsn, mask_in

MEMORY = ":memory:"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class StoreUnavailableError(RuntimeError):
    """The console's database cannot be opened; the message says which and why."""


def is_postgres(target: str) -> bool:
    """Whether ``target`` names a Postgres database (a ``postgresql://`` URL)."""
    return target.lower().startswith(POSTGRES_SCHEMES)


def shown(target: str) -> str:
    """``target`` as messages show it: a URL's password and secret query values masked."""
    return mask_dsn(target)


class Database:
    """One connection and its dialect (``"sqlite"`` or ``"postgres"``), used on one thread at a
    time (the server's event loop, or a command)."""

    def __init__(self, conn: Any, dialect: str, reopen: Callable[[], Any] | None = None) -> None:
        self._conn = conn
        self.dialect = dialect
        self._reopen = reopen

    def _broken(self) -> bool:
        return bool(getattr(self._conn, "broken", False) or getattr(self._conn, "closed", False))

    def _renew(self) -> None:
        """A new connection for a broken one (see the module docstring)."""
        assert self._reopen is not None
        old, self._conn = self._conn, self._reopen()
        old.close()

    def _run(self, sql: str, args: Sequence[Any]) -> Any:
        try:
            return self._conn.execute(self._sql(sql), self._args(args))
        except Exception:
            if self._reopen is None or not self._broken():
                raise
        self._renew()
        return self._conn.execute(self._sql(sql), self._args(args))

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgres" else sql

    def _args(self, args: Sequence[Any]) -> Sequence[Any]:
        if self.dialect != "postgres":
            return args
        # Postgres text cannot hold NUL; stored text is escaped already, this is the last line
        return [a.replace("\x00", "\\u0000") if isinstance(a, str) else a for a in args]

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """Run one statement (a write); its cursor (``rowcount``)."""
        return self._run(sql, args)

    def all(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """The rows of a query."""
        rows = list(self._run(sql, args).fetchall())
        self._end_read()
        return rows

    def one(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """The first row of a query, or None."""
        row = self._run(sql, args).fetchone()
        self._end_read()
        return row

    def _end_read(self) -> None:
        # a Postgres read opens a transaction: end it, or the connection idles inside one (and
        # holds back vacuum); the writes of a batch in progress are committed with it, harmlessly
        if self.dialect == "postgres":
            self.commit()

    def commit(self) -> None:
        try:
            self._conn.commit()
        except Exception:
            if self._reopen is None or not self._broken():
                raise
            self._renew()  # what the broken transaction wrote is lost; what follows is kept

    def close(self) -> None:
        try:
            self._conn.commit()
        finally:
            self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """Statements applied together or not at all."""
        try:
            yield self
        except BaseException:
            self._conn.rollback()
            raise
        self._conn.commit()


def _sqlite(path: str, schema: str) -> Database:
    if path != MEMORY:
        file = Path(path).expanduser()
        if not file.parent.is_dir():  # a typo must not make folders anywhere (as root: /x/y)
            raise StoreUnavailableError(
                f"the folder of the console's database {path!r} does not exist "
                f"({file.parent}): create it, or give another --db"
            )
        path = str(file)
    conn = sqlite3.connect(path, check_same_thread=False, timeout=5.0)
    if path != MEMORY:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.executescript(schema)
    conn.commit()
    return Database(conn, "sqlite")


def _postgres(url: str, schema: str) -> Database:
    try:
        import psycopg  # noqa: F401  (here only to name the missing extra)
    except ImportError as exc:
        raise StoreUnavailableError(
            f"the console's database {shown(url)} is Postgres, which needs the postgres extra: "
            "pip install 'agentensemble-py[postgres]'"
        ) from exc
    return Database(
        _postgres_connection(url, schema),
        "postgres",
        reopen=lambda: _postgres_connection(url, schema),
    )


def _postgres_connection(url: str, schema: str) -> Any:
    import psycopg

    try:
        conn = psycopg.connect(url, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreUnavailableError(
            f"cannot reach the console's database {shown(url)}: "
            f"{mask_in(str(exc), url).strip().splitlines()[0] if str(exc).strip() else exc}"
        ) from None
    try:
        # tables created by two processes at once (a console and `reviewers add`): one waits
        conn.execute("SELECT pg_advisory_xact_lock(7461726)")
        for statement in schema.replace(" REAL", " DOUBLE PRECISION").split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.commit()
    except psycopg.Error as exc:
        conn.close()
        raise StoreUnavailableError(
            f"cannot create the console's tables in {shown(url)}: {mask_in(str(exc), url)}"
        ) from None
    return conn


def open_database(target: str | Path, schema: str) -> Database:
    """``target`` opened (see the module docstring), its tables created."""
    target = str(target)
    return _postgres(target, schema) if is_postgres(target) else _sqlite(target, schema)


__all__ = [
    "MEMORY",
    "Database",
    "StoreUnavailableError",
    "is_postgres",
    "open_database",
    "shown",
]
