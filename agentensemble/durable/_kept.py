"""Attachments' bytes in a durable run's database, once per digest: checkpoints hold references.

An ``Image`` a tool returns or a ``Document`` given as a run input may hold megabytes; pickled
whole, every checkpoint holding one (the run's inputs, each step result) would carry them. While
the runtime hands a value to DBOS to checkpoint, ``keeping_for(run)`` is in force
(``attachments.keeping_bytes``): pickling an attachment writes its bytes to our table
``agentensemble_attachments`` (content-addressed by ``sha256:`` digest, idempotent, committed
before DBOS writes the checkpoint that refers to it) and a row ``(run, digest)`` to
``agentensemble_attachment_runs``; the checkpoint keeps the digest and size only. Unpickled
anywhere (a resumed run, a fork, a listing), the attachment loads its bytes from here the first
time they are asked for (``attachments.reading_kept_bytes``); bytes that are gone are
``MissingAttachmentError`` naming the digest and the run.

Pruning a run forgets its rows; bytes no run refers to are dropped, unless kept or used within
``GRACE_MS`` (a run writing its first checkpoint may not be recorded yet).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import sqlalchemy as sa

from agentensemble.attachments import keeping_bytes, reading_kept_bytes
from agentensemble.errors import AgentEnsembleError

BYTES_TABLE = "agentensemble_attachments"
RUNS_TABLE = "agentensemble_attachment_runs"
GRACE_MS = 3_600_000  # bytes kept or used this recently are never dropped by a prune

_metadata = sa.MetaData()
_bytes = sa.Table(
    BYTES_TABLE,
    _metadata,
    sa.Column("digest", sa.Text, primary_key=True),  # sha256:<hex>
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
    sa.Column("used_at_ms", sa.BigInteger, nullable=False),  # last kept (a prune spares it)
)
_runs = sa.Table(
    RUNS_TABLE,
    _metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("digest", sa.Text, primary_key=True),
)


class MissingAttachmentError(AgentEnsembleError):
    """A checkpoint refers to an attachment whose bytes are not in the run's database."""


class KeptBytes:
    """The attachment tables of one database (DBOS's own: a runtime's or a client's engine)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._ready = False

    def _prepare(self) -> None:
        if self._ready:
            return
        try:
            _metadata.create_all(self.engine, checkfirst=True)
        except (sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.OperationalError):
            if not sa.inspect(self.engine).has_table(BYTES_TABLE):
                raise  # not a race with another process creating them: a real failure
        self._ready = True

    def keep(self, run_id: str, digest: str, data: bytes) -> None:
        """Store ``data`` under ``digest`` (once: known bytes are only marked used) and record
        that ``run_id`` refers to them, in one transaction."""
        self._prepare()
        now = int(time.time() * 1000)
        with self.engine.begin() as connection:
            marked = connection.execute(
                sa.update(_bytes).where(_bytes.c.digest == digest).values(used_at_ms=now)
            ).rowcount
            if not marked:
                connection.execute(
                    _upsert(connection, _bytes)
                    .values(digest=digest, size=len(data), data=data, used_at_ms=now)
                    .on_conflict_do_update(index_elements=["digest"], set_={"used_at_ms": now})
                )
            refers = _upsert(connection, _runs).values(run_id=run_id, digest=digest)
            connection.execute(refers.on_conflict_do_nothing())

    def load(self, digest: str, size: int, owner: str | None = None) -> bytes:
        """The bytes kept under ``digest``; ``MissingAttachmentError`` naming it and the run
        (the one reading, else ``owner``: the run that kept them)."""
        try:
            with self.engine.connect() as connection:
                found = connection.execute(
                    sa.select(_bytes.c.data).where(_bytes.c.digest == digest)
                ).scalar()
        except (sa.exc.ProgrammingError, sa.exc.OperationalError):
            if sa.inspect(self.engine).has_table(BYTES_TABLE):
                raise
            found = None  # no attachment was ever kept in this database
        if found is None:
            raise MissingAttachmentError(
                f"durable run {_current_run(owner)} refers to attachment {digest} ({size} bytes), "
                f"whose bytes are not in its database (table {BYTES_TABLE}): pruned while the "
                "run still needed them, or the database was copied without that table"
            )
        return bytes(found)

    def keeper(self, run_id: str) -> Callable[[str, bytes], str | None]:
        def keep(digest: str, data: bytes) -> str:
            self.keep(run_id, digest, data)
            return run_id

        return keep

    def share(self, parent: str, child: str) -> None:
        """Make ``child`` (a fork) refer to every attachment ``parent`` refers to: it replays
        the parent's checkpoints, so pruning the parent must not drop their bytes."""
        self._prepare()
        with self.engine.begin() as connection:
            digests = connection.execute(
                sa.select(_runs.c.digest).where(_runs.c.run_id == parent)
            ).scalars()
            rows = [{"run_id": child, "digest": d} for d in digests]
            if rows:
                connection.execute(_upsert(connection, _runs).on_conflict_do_nothing(), rows)

    def prune(self, run_ids: Iterable[str], *, grace_ms: int = GRACE_MS) -> int:
        """Forget the rows of deleted ``run_ids``, then drop bytes no run refers to and not kept
        within ``grace_ms``; how many attachments were dropped."""
        self._prepare()
        ids = list(run_ids)
        cutoff = int(time.time() * 1000) - grace_ms
        with self.engine.begin() as connection:
            for start in range(0, len(ids), 500):
                connection.execute(
                    sa.delete(_runs).where(_runs.c.run_id.in_(ids[start : start + 500]))
                )
            referred = sa.select(_runs.c.digest).where(_runs.c.digest == _bytes.c.digest)
            dropped = connection.execute(
                sa.delete(_bytes).where(~sa.exists(referred), _bytes.c.used_at_ms < cutoff)
            ).rowcount
        return int(dropped or 0)


def _upsert(connection: Any, table: sa.Table) -> Any:
    """An INSERT that can say ON CONFLICT, in the connection's dialect (SQLite or Postgres)."""
    if connection.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)


def _current_run(owner: str | None) -> str:
    from dbos import DBOS

    run_id = DBOS.workflow_id or owner
    return repr(run_id) if run_id else "(unknown)"


# the process's store: a launched runtime's (else a client's); DBOS is one per process
_active: KeptBytes | None = None


def use(store: KeptBytes, *, replace: bool = True) -> None:
    """Make ``store`` where this process keeps and reads attachments' bytes (``replace=False``:
    only if it has none yet, so a client opened beside a runtime leaves the runtime's)."""
    global _active
    if _active is not None and not replace:
        return
    _active = store
    reading_kept_bytes(store.load)


def stop_using(store: KeptBytes) -> None:
    """Forget ``store`` if it is the process's (a runtime shut down, a client closed)."""
    global _active
    if _active is store:
        _active = None
        reading_kept_bytes(None)


@contextmanager
def keeping_for(run_id: str | None, store: KeptBytes | None = None) -> Iterator[None]:
    """In the block, attachments pickled (checkpointed) for ``run_id`` keep their bytes in
    ``store`` (default: the process's) and pickle a reference; without a run or a store, as
    they are."""
    chosen = store or _active
    if chosen is None or not run_id:
        with nullcontext():
            yield
        return
    with keeping_bytes(chosen.keeper(run_id)):
        yield


__all__ = [
    "BYTES_TABLE",
    "GRACE_MS",
    "RUNS_TABLE",
    "KeptBytes",
    "MissingAttachmentError",
    "keeping_for",
    "stop_using",
    "use",
]
