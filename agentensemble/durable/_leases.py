"""The table of worker leases (``agentensemble_workers``), in DBOS's own database.

One row per worker of an application: who it is (host, pid, an incarnation token per launch)
and when it last renewed its lease, by the database's clock (``now()``, ``julianday('now')``)
so that workers on different machines agree. Every write is one conditional statement, so of
two processes racing for a row one wins. A liveness table only: never checkpoints, never a
queue (those are DBOS's).
"""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from agentensemble.errors import ConfigurationError

TABLE = "agentensemble_workers"

_metadata = sa.MetaData()
_workers = sa.Table(
    TABLE,
    _metadata,
    sa.Column("app_name", sa.Text, primary_key=True),
    sa.Column("worker_id", sa.Text, primary_key=True),
    sa.Column("incarnation", sa.Text, nullable=False),  # one per launch: a restart is another
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_at_ms", sa.BigInteger, nullable=False),
    sa.Column("heartbeat_at_ms", sa.BigInteger, nullable=False),
    sa.Column("claimed_by", sa.Text, nullable=True),  # a live worker taking this one's runs
)


@dataclass(frozen=True)
class Lease:
    """One worker's lease as read from the table; ``age_s`` by the database's clock."""

    worker_id: str
    incarnation: str
    host: str
    pid: int
    age_s: float
    claimed_by: str | None

    def describe(self) -> str:
        return f"host {self.host!r} pid {self.pid}, renewed {self.age_s:.1f} s ago"


class Leases:
    """The lease table of one application in one database (tiny connection pool)."""

    def __init__(self, url: str, app_name: str) -> None:
        self.app_name = app_name
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.engine = _engine(url)
        try:
            _metadata.create_all(self.engine, checkfirst=True)
        except (sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.OperationalError):
            if not sa.inspect(self.engine).has_table(TABLE):
                raise  # not a race with another worker creating it: a real failure
        self._now = _now_ms(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def read(self, worker_id: str) -> Lease | None:
        """``worker_id``'s lease, or None."""
        with self.engine.connect() as connection:
            row = connection.execute(
                sa.select(*_fields(self._now)).where(*self._key(worker_id))
            ).first()
        return None if row is None else _lease(row)

    def is_live(self, lease: Lease, dead_after: float) -> bool:
        """Renewed within ``dead_after``, not being taken over, and (on this host) its pid runs."""
        if lease.claimed_by is not None or lease.age_s >= dead_after:
            return False
        return not (lease.host == self.host and not _pid_alive(lease.pid))

    def acquire(self, worker_id: str, dead_after: float) -> str:
        """Write this process's lease for ``worker_id``; its incarnation token.

        A lease of a dead pid on this host, a stale one, or one already being taken over is
        replaced; a live one of another process is refused (two processes under one id would
        run runs twice).
        """
        incarnation = uuid.uuid4().hex
        values = {
            "incarnation": incarnation,
            "host": self.host,
            "pid": self.pid,
            "started_at_ms": self._now,
            "heartbeat_at_ms": self._now,
            "claimed_by": None,
        }
        for _attempt in range(10):  # another process may change the row between read and write
            found = self.read(worker_id)
            if found is None:
                try:
                    with self.engine.begin() as connection:
                        connection.execute(
                            sa.insert(_workers).values(
                                app_name=self.app_name, worker_id=worker_id, **values
                            )
                        )
                    return incarnation
                except sa.exc.IntegrityError:
                    continue
            ours = found.host == self.host and found.pid == self.pid
            if not ours and self.is_live(found, dead_after):
                raise ConfigurationError(
                    f"worker id {worker_id!r} is in use by a live process ({found.describe()}): "
                    "two processes under one id would run the same runs twice. Give this "
                    f"worker another id, or stop that process (a lease not renewed for "
                    f"{dead_after} s is taken over)"
                )
            with self.engine.begin() as connection:
                taken = connection.execute(
                    sa.update(_workers)
                    .where(*self._key(worker_id), _workers.c.incarnation == found.incarnation)
                    .values(**values)
                ).rowcount
            if taken == 1:
                return incarnation
        raise ConfigurationError(f"could not write the lease of worker {worker_id!r}: contended")

    def beat(self, worker_id: str, incarnation: str) -> bool:
        """Renew the lease; False if it is gone (another worker declared this one dead)."""
        with self.engine.begin() as connection:
            renewed = connection.execute(
                sa.update(_workers)
                .where(
                    *self._key(worker_id),
                    _workers.c.incarnation == incarnation,
                    _workers.c.claimed_by.is_(None),
                )
                .values(heartbeat_at_ms=self._now)
            ).rowcount
        return bool(renewed == 1)

    def stale(self, dead_after: float, *, besides: str, limit: int) -> list[Lease]:
        """Up to ``limit`` leases not renewed for ``dead_after`` seconds, oldest first."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                sa.select(*_fields(self._now))
                .where(
                    _workers.c.app_name == self.app_name,
                    _workers.c.worker_id != besides,
                    _workers.c.heartbeat_at_ms < self._cutoff(dead_after),
                )
                .order_by(_workers.c.heartbeat_at_ms)
                .limit(limit)
            ).all()
        return [_lease(row) for row in rows]

    def claim(self, lease: Lease, claimer: str, dead_after: float) -> bool:
        """Claim a stale lease for ``claimer``; True for the one claimer that won it.

        The claim renews the lease in the claimer's name: a claimer dying before it has
        handed the runs back leaves a lease that goes stale again and is claimed again.
        """
        with self.engine.begin() as connection:
            won = connection.execute(
                sa.update(_workers)
                .where(
                    *self._key(lease.worker_id),
                    _workers.c.incarnation == lease.incarnation,
                    _workers.c.heartbeat_at_ms < self._cutoff(dead_after),
                )
                .values(claimed_by=claimer, heartbeat_at_ms=self._now)
            ).rowcount
        return bool(won == 1)

    def release(self, lease: Lease, claimer: str) -> None:
        """Delete a claimed lease once its runs are handed back (unless it was replaced)."""
        with self.engine.begin() as connection:
            connection.execute(
                sa.delete(_workers).where(
                    *self._key(lease.worker_id),
                    _workers.c.incarnation == lease.incarnation,
                    _workers.c.claimed_by == claimer,
                )
            )

    def _key(self, worker_id: str) -> tuple[Any, ...]:
        return (_workers.c.app_name == self.app_name, _workers.c.worker_id == worker_id)

    def _cutoff(self, dead_after: float) -> Any:
        return self._now - int(dead_after * 1000)


def live_leases(engine: sa.Engine, app_name: str, dead_after: float) -> list[Lease]:
    """The leases of ``app_name``'s live workers in ``engine``'s database: renewed within
    ``dead_after`` by the database's clock, not being taken over, and (on this host) their pid
    running. Reads only: a database no worker ever launched on has no lease table, and none."""
    if not sa.inspect(engine).has_table(TABLE):
        return []
    now = _now_ms(engine)
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(*_fields(now)).where(
                _workers.c.app_name == app_name,
                _workers.c.claimed_by.is_(None),
                _workers.c.heartbeat_at_ms >= now - int(dead_after * 1000),
            )
        ).all()
    host = socket.gethostname()
    leases = [_lease(row) for row in rows]
    return [lease for lease in leases if lease.host != host or _pid_alive(lease.pid)]


def _engine(url: str) -> sa.Engine:
    """An engine on DBOS's database as DBOS builds it (psycopg 3 for Postgres), pool of one."""
    parsed = sa.make_url(url)
    if parsed.drivername.startswith("sqlite"):
        in_memory = parsed.database in (None, "", ":memory:")
        # every lease write is one statement committed as it runs (autocommit): SQLite takes
        # the write lock as a writing statement starts (waiting up to busy_timeout behind
        # another writer, so no read-then-upgrade deadlock) and lets go of it as the statement
        # ends. A worker paused (SIGSTOP, a long GC pause) after its heartbeat's UPDATE used to
        # keep the database's write lock until its COMMIT, blocking every writer (DBOS's
        # checkpoints included) for up to the busy timeout; and no BEGIN / COMMIT round trips
        engine = sa.create_engine(
            parsed, isolation_level="AUTOCOMMIT", **({} if in_memory else {"pool_size": 1})
        )

        @sa.event.listens_for(engine, "connect")
        def _sqlite(connection: Any, _record: Any) -> None:
            connection.execute("PRAGMA busy_timeout=30000")

        return engine
    parsed = parsed.set(drivername="postgresql+psycopg")
    _create_database_if_missing(parsed)
    return sa.create_engine(
        parsed,
        pool_size=1,
        max_overflow=1,
        pool_pre_ping=True,
        connect_args={"connect_timeout": 10},
        # every lease write is one statement, committed as it runs: a worker paused between
        # its heartbeat's UPDATE and the COMMIT (SIGSTOP, a long GC pause) used to keep the row
        # locked, and the worker declaring it dead waited on its claim for as long
        isolation_level="AUTOCOMMIT",
    )


def _create_database_if_missing(url: sa.URL) -> None:
    """The lease is written before DBOS launches, so create its database as DBOS would."""
    probe = sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args={"connect_timeout": 10})
    try:
        with probe.connect():
            return
    except sa.exc.OperationalError as error:
        if "does not exist" not in str(error):
            raise
    finally:
        probe.dispose()
    admin = sa.create_engine(
        url.set(database="postgres"), poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT"
    )
    try:
        with admin.connect() as connection, contextlib.suppress(sa.exc.ProgrammingError):
            name = admin.dialect.identifier_preparer.quote(str(url.database))
            connection.execute(sa.text(f"CREATE DATABASE {name}"))
    finally:
        admin.dispose()


def _now_ms(engine: sa.Engine) -> Any:
    """The database's clock in epoch milliseconds, as a SQL expression."""
    if engine.dialect.name == "sqlite":
        return sa.cast((sa.func.julianday("now") - 2440587.5) * 86400000.0, sa.BigInteger)
    return sa.cast(sa.func.extract("epoch", sa.func.clock_timestamp()) * 1000, sa.BigInteger)


def _fields(now: Any) -> tuple[Any, ...]:
    c = _workers.c
    age = (now - c.heartbeat_at_ms).label("age_ms")
    return (c.worker_id, c.incarnation, c.host, c.pid, age, c.claimed_by)


def _lease(row: Any) -> Lease:
    return Lease(
        worker_id=row.worker_id,
        incarnation=row.incarnation,
        host=row.host,
        pid=int(row.pid),
        age_s=max(0.0, int(row.age_ms) / 1000),
        claimed_by=row.claimed_by,
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


__all__ = ["TABLE", "Lease", "Leases", "live_leases"]
