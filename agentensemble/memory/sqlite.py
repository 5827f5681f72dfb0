"""SQLiteMemory: the embedded default store. One file, FTS5 (BM25, English stemming) plus recency,
stdlib only.

Safe for several threads (a connection per thread) and several processes (WAL journal, a busy
timeout, writes in ``BEGIN IMMEDIATE`` transactions): concurrent writers wait their turn and
lose nothing. With an embedder, each entry's vector is stored beside it and search fuses the
lexical and the vector ranking (``_vectors.py``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from agentensemble.memory._lexical import LexicalRanking
from agentensemble.memory._query import query_terms
from agentensemble.memory._vectors import VectorIndex, fuse, pack, relative
from agentensemble.memory.embedders import Embedder, chosen_embedder, embed_one, normalised
from agentensemble.memory.entry import MemoryEntry
from agentensemble.memory.store import (
    AsyncStoreMethods,
    check_limit,
    check_prune,
    check_scope,
    freshness,
    stored_metadata,
    stored_text,
    unstorable,
    utc,
)

DEFAULT_PATH = "agentensemble-memory.sqlite"
BUSY_TIMEOUT_MS = 30_000
#: Pages are read through a memory map of the file (address space, not memory: the OS page cache
#: holds them once for every connection) instead of a read() and a copy per page; at 100k
#: entries a lexical search took 0.6x-0.7x the CPU (benchmarks/results.d/scale.md).
MMAP_BYTES = 256 * 2**20
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_entries (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS memory_entries_scope ON memory_entries (scope, created_at);
CREATE TABLE IF NOT EXISTS memory_scopes (scope TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS memory_removals (scope TEXT PRIMARY KEY, removed INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS memory_entries_removed AFTER DELETE ON memory_entries BEGIN
    INSERT INTO memory_removals (scope, removed) VALUES (old.scope, 1)
    ON CONFLICT (scope) DO UPDATE SET removed = removed + 1;
END;
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5 (
    text, content='memory_entries', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_vocab USING fts5vocab (memory_fts, 'row');
CREATE TRIGGER IF NOT EXISTS memory_entries_ai AFTER INSERT ON memory_entries BEGIN
    INSERT INTO memory_fts (rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_entries_ad AFTER DELETE ON memory_entries BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
"""
_COLUMNS = "rowid, id, scope, text, metadata, created_at"
#: Lexical candidates read per result asked for, before recency and fusion re-rank them.
CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 20


class SQLiteMemory(AsyncStoreMethods):
    """A memory store in one SQLite file (created on first use; its folder must exist)."""

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_PATH,
        embedder: Embedder | Literal["auto"] | None = "auto",
    ) -> None:
        self.embedder = chosen_embedder(embedder)
        self._memory_uri: str | None = None
        if str(path) == ":memory:":  # one database shared by this store's threads
            self._memory_uri = f"file:agentensemble-{uuid.uuid4().hex}?mode=memory&cache=shared"
            self.path = Path(":memory:")
        else:
            self.path = Path(path).expanduser()
            folder = self.path.absolute().parent
            if not folder.is_dir():
                raise FileNotFoundError(
                    f"memory store {str(path)!r}: the folder {str(folder)!r} does not exist; "
                    "create it first"
                )
            if self.path.is_dir():
                raise IsADirectoryError(
                    f"memory store {str(path)!r} is a folder; give a file path such as "
                    f"{str(self.path / DEFAULT_PATH)!r}"
                )
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        #: scope -> ((its version, its removals) when read, its vectors, the highest rowid read)
        self._indexes: dict[str, tuple[tuple[int, int], VectorIndex, int]] = {}
        self._lexical = LexicalRanking()
        self.use_numpy = True
        self._anchor = self._connection()  # creates the schema now: a bad path fails here

    # -- connections --------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is not None and getattr(self._local, "pid", None) == os.getpid():
            return connection
        if self._memory_uri is not None:
            connection = sqlite3.connect(
                self._memory_uri, uri=True, isolation_level=None, check_same_thread=False
            )
        else:
            try:
                connection = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False
                )
            except sqlite3.Error as error:
                raise OSError(
                    f"memory store {str(self.path)!r} cannot be opened: {error}"
                ) from error
        try:
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if self._memory_uri is None:
                connection.execute("PRAGMA journal_mode = WAL")
                connection.execute("PRAGMA synchronous = NORMAL")
                connection.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            connection.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")
        except sqlite3.Error as error:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            connection.close()
            raise OSError(f"memory store {str(self.path)!r} cannot be used: {error}") from error
        self._local.connection = connection
        self._local.pid = os.getpid()
        with self._lock:
            self._connections.append(connection)
        return connection

    @staticmethod
    @contextmanager
    def _write(connection: sqlite3.Connection) -> Iterator[None]:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    @contextmanager
    def _writing(self, *scopes: str) -> Iterator[sqlite3.Connection]:
        """A write transaction that marks ``scopes`` as changed (their vector caches go stale)."""
        connection = self._connection()
        with self._write(connection):
            yield connection
            for scope in scopes:
                connection.execute(
                    "INSERT INTO memory_scopes (scope, version) VALUES (?, 1) "
                    "ON CONFLICT (scope) DO UPDATE SET version = version + 1",
                    (scope,),
                )

    def close(self) -> None:
        """Close every connection this store opened (other processes are not affected)."""
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            with suppress(sqlite3.Error):
                connection.close()
        self._local = threading.local()

    def __enter__(self) -> SQLiteMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------

    def add(self, scope: str, text: str, *, metadata: dict[str, Any] | None = None) -> MemoryEntry:
        """Store ``text`` in ``scope`` (secrets redacted first) and return the new entry."""
        check_scope(scope)
        text = stored_text(text)
        meta = stored_metadata(metadata)
        vector = pack(embed_one(self.embedder, text)) if self.embedder is not None else None
        entry_id, created = uuid.uuid4().hex, time.time()
        with self._writing(scope) as connection:
            connection.execute(
                "INSERT INTO memory_entries (id, scope, text, metadata, created_at, embedding) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (entry_id, scope, text, meta, created, vector),
            )
        return MemoryEntry(
            id=entry_id, scope=scope, text=text, metadata=json.loads(meta), created_at=utc(created)
        )

    def delete(self, entry_id: str) -> bool:
        """Remove one entry; whether it existed."""
        if unstorable(str(entry_id)):  # no entry has such an id, and Postgres refuses NUL
            return False
        connection = self._connection()
        row = connection.execute(
            "SELECT scope FROM memory_entries WHERE id = ?", (str(entry_id),)
        ).fetchone()
        if row is None:
            return False
        with self._writing(row[0]) as connection:
            cursor = connection.execute("DELETE FROM memory_entries WHERE id = ?", (str(entry_id),))
        return cursor.rowcount > 0

    def clear(self, scope: str) -> int:
        """Remove every entry of ``scope``; how many there were."""
        check_scope(scope)
        with self._writing(scope) as connection:
            cursor = connection.execute("DELETE FROM memory_entries WHERE scope = ?", (scope,))
        return cursor.rowcount

    def prune(
        self,
        scope: str,
        *,
        keep_last: int | None = None,
        older_than: timedelta | None = None,
    ) -> int:
        """Remove entries older than ``older_than`` and all but the newest ``keep_last``;
        how many were removed."""
        check_scope(scope)
        check_prune(keep_last, older_than)
        removed = 0
        with self._writing(scope) as connection:
            if older_than is not None:
                cutoff = time.time() - older_than.total_seconds()
                removed += connection.execute(
                    "DELETE FROM memory_entries WHERE scope = ? AND created_at < ?",
                    (scope, cutoff),
                ).rowcount
            if keep_last is not None:
                removed += connection.execute(
                    "DELETE FROM memory_entries WHERE scope = ? AND rowid NOT IN ("
                    "SELECT rowid FROM memory_entries WHERE scope = ? "
                    "ORDER BY created_at DESC, rowid DESC LIMIT ?)",
                    (scope, scope, keep_last),
                ).rowcount
        return removed

    # -- reading ------------------------------------------------------------------------------

    def entries(self, scope: str, *, last: int | None = None) -> list[MemoryEntry]:
        """Every entry of ``scope``, oldest first; with ``last``, only the newest ``last`` of
        them (read with a LIMIT: a long session costs what it shows, not its whole history)."""
        check_scope(scope)
        if last is None:
            rows = self._connection().execute(
                f"SELECT {_COLUMNS} FROM memory_entries WHERE scope = ? ORDER BY created_at, rowid",
                (scope,),
            )
            return [_entry(row) for row in rows]
        rows = self._connection().execute(
            f"SELECT {_COLUMNS} FROM memory_entries WHERE scope = ? "
            "ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (scope, check_limit(last)),
        )
        return [_entry(row) for row in rows][::-1]

    def scopes(self) -> list[tuple[str, int]]:
        """Every scope holding entries, with its entry count (for a person inspecting a store)."""
        rows = self._connection().execute(
            "SELECT scope, COUNT(*) FROM memory_entries GROUP BY scope ORDER BY scope"
        )
        return [(str(scope), int(count)) for scope, count in rows]

    def search(self, scope: str, query: str, *, limit: int = 5) -> list[MemoryEntry]:
        """The entries of ``scope`` that best match ``query``, best first, each with a score."""
        check_scope(scope)
        check_limit(limit)
        terms = query_terms(query)
        pool = max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT)
        connection = self._connection()
        lexical = self._lexical.ranked(connection, scope, terms, pool)
        if self.embedder is None:
            scores = relative(lexical)
        else:
            semantic: list[tuple[int, float]] = []
            if query.strip():
                vector = embed_one(self.embedder, query)
                semantic = self._vector_index(scope, len(vector)).top(vector, pool)
            scores = fuse(lexical, semantic)
        if not scores:
            return []
        rows = _fetch(connection, list(scores))
        now = time.time()
        ranked = sorted(
            ((scores[row[0]] * freshness(row[5], now), row) for row in rows),
            key=lambda pair: (-pair[0], -pair[1][5]),
        )
        return [_entry(row, score) for score, row in ranked[:limit]]

    def _vector_index(self, scope: str, dims: int) -> VectorIndex:
        """The scope's vectors, read once and kept until the scope changes (any process).
        A change that only added entries (no removal counted by the ``memory_removals``
        trigger, which fires for every writer of the file) reads just the new rows, past the
        highest rowid read (rowids only grow) and appends them; a removal reads the scope again."""
        connection = self._connection()
        version, removed = connection.execute(
            "SELECT (SELECT version FROM memory_scopes WHERE scope = ?1), "
            "(SELECT removed FROM memory_removals WHERE scope = ?1)",
            (scope,),
        ).fetchone()
        state = (int(version or 0), int(removed or 0))
        with self._lock:
            cached = self._indexes.get(scope)
        if cached is not None and cached[0] == state:
            return cached[1]
        if cached is not None and cached[0][1] == state[1] and cached[1].dims == dims:
            keys, vectors = self._read_vectors(scope, dims, after=cached[2])
            with self._lock:
                if self._indexes.get(scope) is cached:  # else another thread moved it on
                    index = cached[1].extended(keys, vectors)
                    self._indexes[scope] = (state, index, max([cached[2], *keys]))
                    return index
        keys, vectors = self._read_vectors(scope, dims)
        index = VectorIndex(keys, vectors, use_numpy=self.use_numpy)
        with self._lock:
            self._indexes[scope] = (state, index, max(keys, default=0))
        return index

    def _read_vectors(self, scope: str, dims: int, after: int = 0) -> tuple[list[Any], list[Any]]:
        """Keys and vectors of the scope's entries past rowid ``after``; entries stored without
        this embedder's vector are embedded now (and stored). Past a rowid, the rowid range
        drives the read (``+scope``: not the scope's index, which would walk the whole scope)."""
        keys: list[Any] = []
        vectors = []
        unembedded: list[int] = []
        if after:
            sql = "SELECT rowid, embedding FROM memory_entries WHERE rowid > ? AND +scope = ?"
            rows = self._connection().execute(sql, (after, scope))
        else:
            sql = "SELECT rowid, embedding FROM memory_entries WHERE scope = ?"
            rows = self._connection().execute(sql, (scope,))
        size = dims * 4  # float32: a stored vector is its bytes, read without unpacking
        for rowid, blob in rows:
            if blob is None or len(blob) != size:
                unembedded.append(rowid)  # written without this embedder: embed it now
                continue
            keys.append(rowid)
            vectors.append(bytes(blob))
        missing = [(int(row[0]), str(row[3])) for row in _fetch(self._connection(), unembedded)]
        if missing:
            self._backfill(missing, keys, vectors)
        return keys, vectors

    def _backfill(
        self, missing: list[tuple[int, str]], keys: list[Any], vectors: list[Any]
    ) -> None:
        assert self.embedder is not None
        connection = self._connection()
        for start in range(0, len(missing), 256):
            batch = missing[start : start + 256]
            embedded = self.embedder.embed([text for _, text in batch])
            with self._write(connection):  # not a scope change: no version bump
                for (rowid, _), raw in zip(batch, embedded, strict=False):
                    vector = pack(normalised([float(x) for x in raw]))
                    connection.execute(
                        "UPDATE memory_entries SET embedding = ? WHERE rowid = ?", (vector, rowid)
                    )
                    keys.append(rowid)
                    vectors.append(vector)

    def __repr__(self) -> str:
        return f"SQLiteMemory({str(self.path)!r}, embedder={self.embedder!r})"


def _fetch(connection: sqlite3.Connection, rowids: list[int]) -> list[Any]:
    rows: list[Any] = []
    for start in range(0, len(rowids), 500):
        chunk = rowids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows += connection.execute(
            f"SELECT {_COLUMNS} FROM memory_entries WHERE rowid IN ({marks})", chunk
        ).fetchall()
    return rows


def _entry(row: Any, score: float | None = None) -> MemoryEntry:
    _, entry_id, scope, text, metadata, created = row
    return MemoryEntry(
        id=entry_id,
        scope=scope,
        text=text,
        metadata=json.loads(metadata),
        created_at=utc(created),
        score=score,
    )


__all__ = ["DEFAULT_PATH", "SQLiteMemory"]
