"""PostgresMemory: memory in a shared Postgres (extra ``postgres``: psycopg 3).

Full-text search with a ``tsvector`` column (the ``english`` configuration: English stemming,
as the SQLite store's porter tokenizer) and a GIN index. Postgres' own ``ts_rank`` ignores
how rare a word is, so candidates are ranked by the summed inverse document frequency of the
query words they hold (rare words first, like BM25), with ``ts_rank_cd`` as a tie-breaker,
then weighted by recency. With an embedder, vectors are stored beside the entries and fused
with the lexical ranking.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
from datetime import timedelta
from typing import Any, Literal

from agentensemble._base.dsn import mask_dsn, mask_in
from agentensemble.memory._query import query_terms
from agentensemble.memory._vectors import VectorIndex, fuse, pack, relative, unpack
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
)

_TABLE = "agentensemble_memory"
_SCHEMA = f"""
SELECT pg_advisory_xact_lock(7301946);
CREATE TABLE IF NOT EXISTS {_TABLE} (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata JSONB NOT NULL DEFAULT '{{}}',
    created_at DOUBLE PRECISION NOT NULL,
    embedding BYTEA,
    tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
);
CREATE INDEX IF NOT EXISTS {_TABLE}_tsv ON {_TABLE} USING GIN (tsv);
CREATE INDEX IF NOT EXISTS {_TABLE}_scope ON {_TABLE} (scope, created_at);
CREATE TABLE IF NOT EXISTS {_TABLE}_scopes (scope TEXT PRIMARY KEY, version BIGINT NOT NULL);
ALTER TABLE {_TABLE}_scopes ADD COLUMN IF NOT EXISTS entries BIGINT NOT NULL DEFAULT 0;
"""
_COLUMNS = "seq, id, scope, text, metadata, created_at"
#: A query word found in at least this many entries of the scope is left out of the search
#: when the query has rarer words (counting stops there, so a count costs at most this much).
COMMON_CAP = 1_000
CANDIDATES_PER_RESULT = 4
MIN_CANDIDATES = 20


def _shown(url: str) -> str:
    return mask_dsn(url)


class PostgresMemory(AsyncStoreMethods):
    """A memory store in a Postgres database (its table is created on first use)."""

    def __init__(self, url: str, embedder: Embedder | Literal["auto"] | None = "auto") -> None:
        try:
            import psycopg
        except ImportError as error:
            raise ImportError(
                "PostgresMemory needs psycopg 3: pip install 'agentensemble-py[postgres]'"
            ) from error
        if not isinstance(url, str) or not url.strip():
            raise ValueError("PostgresMemory needs a database URL such as postgresql://host/db")
        self._psycopg = psycopg
        self.url = url
        self.embedder = chosen_embedder(embedder)
        self.use_numpy = True
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[Any] = []
        self._indexes: dict[str, tuple[int, VectorIndex]] = {}
        connection = self._connection()  # fails now, in one line, when the server is not there
        with connection.transaction():
            connection.execute(_SCHEMA)

    def _connection(self) -> Any:
        connection = getattr(self._local, "connection", None)
        if connection is not None and not connection.closed and self._local.pid == os.getpid():
            return connection
        try:
            connection = self._psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except self._psycopg.Error as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise ConnectionError(
                f"memory store: cannot connect to Postgres at {_shown(self.url)}: "
                f"{mask_in(first, self.url)}"
            ) from None
        self._local.connection = connection
        self._local.pid = os.getpid()
        with self._lock:
            self._connections.append(connection)
        return connection

    def _bump(self, connection: Any, scope: str, added: int) -> None:
        """Mark ``scope`` changed (vector caches go stale) and keep its entry count."""
        connection.execute(
            f"INSERT INTO {_TABLE}_scopes AS s (scope, version, entries) "
            "VALUES (%s, 1, GREATEST(%s, 0)) ON CONFLICT (scope) DO UPDATE "
            "SET version = s.version + 1, entries = GREATEST(s.entries + %s, 0)",
            (scope, added, added),
        )

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()
        self._local = threading.local()

    def __enter__(self) -> PostgresMemory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------

    def add(self, scope: str, text: str, *, metadata: dict[str, Any] | None = None) -> MemoryEntry:
        check_scope(scope)
        text = stored_text(text)
        meta = stored_metadata(metadata)
        vector = pack(embed_one(self.embedder, text)) if self.embedder is not None else None
        entry_id, created = uuid.uuid4().hex, time.time()
        connection = self._connection()
        with connection.transaction():
            connection.execute(
                f"INSERT INTO {_TABLE} (id, scope, text, metadata, created_at, embedding) "
                "VALUES (%s, %s, %s, %s::jsonb, %s, %s)",
                (entry_id, scope, text, meta, created, vector),
            )
            self._bump(connection, scope, 1)
        return _entry((0, entry_id, scope, text, json.loads(meta), created))

    def delete(self, entry_id: str) -> bool:
        if unstorable(str(entry_id)):  # no entry has such an id, and Postgres refuses NUL
            return False
        connection = self._connection()
        with connection.transaction():
            row = connection.execute(
                f"DELETE FROM {_TABLE} WHERE id = %s RETURNING scope", (str(entry_id),)
            ).fetchone()
            if row is not None:
                self._bump(connection, row[0], -1)
        return row is not None

    def clear(self, scope: str) -> int:
        check_scope(scope)
        connection = self._connection()
        with connection.transaction():
            removed = connection.execute(f"DELETE FROM {_TABLE} WHERE scope = %s", (scope,))
            self._bump(connection, scope, -removed.rowcount)
        return int(removed.rowcount)

    def prune(
        self,
        scope: str,
        *,
        keep_last: int | None = None,
        older_than: timedelta | None = None,
    ) -> int:
        check_scope(scope)
        check_prune(keep_last, older_than)
        removed = 0
        connection = self._connection()
        with connection.transaction():
            if older_than is not None:
                cutoff = time.time() - older_than.total_seconds()
                removed += connection.execute(
                    f"DELETE FROM {_TABLE} WHERE scope = %s AND created_at < %s", (scope, cutoff)
                ).rowcount
            if keep_last is not None:
                removed += connection.execute(
                    f"DELETE FROM {_TABLE} WHERE scope = %s AND seq NOT IN ("
                    f"SELECT seq FROM {_TABLE} WHERE scope = %s "
                    "ORDER BY created_at DESC, seq DESC LIMIT %s)",
                    (scope, scope, keep_last),
                ).rowcount
            self._bump(connection, scope, -removed)
        return removed

    # -- reading ------------------------------------------------------------------------------

    def entries(self, scope: str, *, last: int | None = None) -> list[MemoryEntry]:
        """Every entry of ``scope``, oldest first; with ``last``, only the newest ``last``
        (read with a LIMIT, as ``SQLiteMemory.entries``)."""
        check_scope(scope)
        if last is None:
            rows = self._connection().execute(
                f"SELECT {_COLUMNS} FROM {_TABLE} WHERE scope = %s ORDER BY created_at, seq",
                (scope,),
            )
            return [_entry(row) for row in rows]
        rows = self._connection().execute(
            f"SELECT {_COLUMNS} FROM {_TABLE} WHERE scope = %s "
            "ORDER BY created_at DESC, seq DESC LIMIT %s",
            (scope, check_limit(last)),
        )
        return [_entry(row) for row in rows][::-1]

    def scopes(self) -> list[tuple[str, int]]:
        rows = self._connection().execute(
            f"SELECT scope, COUNT(*) FROM {_TABLE} GROUP BY scope ORDER BY scope"
        )
        return [(str(scope), int(count)) for scope, count in rows]

    def search(self, scope: str, query: str, *, limit: int = 5) -> list[MemoryEntry]:
        check_scope(scope)
        check_limit(limit)
        terms = query_terms(query)
        pool = max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT)
        connection = self._connection()
        lexical = self._lexical(connection, scope, terms, pool) if terms else []
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
        rows = connection.execute(
            f"SELECT {_COLUMNS} FROM {_TABLE} WHERE seq = ANY(%s)", (list(scores),)
        ).fetchall()
        now = time.time()
        ranked = sorted(
            ((scores[row[0]] * freshness(row[5], now), row) for row in rows),
            key=lambda pair: (-pair[0], -pair[1][5]),
        )
        return [_entry(row, score) for score, row in ranked[:limit]]

    def _lexical(
        self, connection: Any, scope: str, terms: list[str], pool: int
    ) -> list[tuple[int, float]]:
        """Candidates ranked by the summed IDF of the query words they contain.

        Each word's document count is read from the GIN index, capped at ``COMMON_CAP``: a word
        found in more entries than that is left out when rarer words remain (as in SQLite), so
        no search scores every entry of a large scope."""
        queries = [f"'{term}'" for term in terms]  # \w+ words: no quote, no operator
        counted = " UNION ALL ".join(
            f"SELECT {n}, COUNT(*) FROM (SELECT 1 FROM {_TABLE} WHERE scope = %s "
            f"AND tsv @@ to_tsquery('english', %s) LIMIT {COMMON_CAP}) AS t{n}"
            for n in range(len(queries))
        )
        params: list[Any] = [value for query in queries for value in (scope, query)]
        frequencies = dict(connection.execute(counted, params).fetchall())
        row = connection.execute(
            f"SELECT entries FROM {_TABLE}_scopes WHERE scope = %s", (scope,)
        ).fetchone()
        total = max(int(row[0]) if row else 0, *frequencies.values(), 1)
        found = [(queries[n], int(df)) for n, df in sorted(frequencies.items()) if df]
        rare = [(query, df) for query, df in found if df < COMMON_CAP]
        used = rare or found
        if not used:
            return []
        weights = [(q, math.log(1 + (total - df + 0.5) / (df + 0.5))) for q, df in used]
        any_term = " | ".join(q for q, _ in used)
        weighted = " + ".join(
            "CASE WHEN tsv @@ to_tsquery('english', %s) THEN %s ELSE 0 END" for _ in weights
        )
        values: list[Any] = [value for pair in weights for value in pair]
        rows = connection.execute(
            f"SELECT seq, ({weighted}) + 0.1 * ts_rank_cd(tsv, to_tsquery('english', %s)) AS s "
            f"FROM {_TABLE} WHERE scope = %s AND tsv @@ to_tsquery('english', %s) "
            "ORDER BY s DESC LIMIT %s",
            (*values, any_term, scope, any_term, pool),
        ).fetchall()
        return [(int(seq), float(score)) for seq, score in rows]

    def _vector_index(self, scope: str, dims: int) -> VectorIndex:
        connection = self._connection()
        row = connection.execute(
            f"SELECT version FROM {_TABLE}_scopes WHERE scope = %s", (scope,)
        ).fetchone()
        version = int(row[0]) if row else 0
        with self._lock:
            cached = self._indexes.get(scope)
        if cached is not None and cached[0] == version:
            return cached[1]
        assert self.embedder is not None
        keys: list[Any] = []
        vectors = []
        missing: list[tuple[int, str]] = []
        for seq, text, blob in connection.execute(
            f"SELECT seq, text, embedding FROM {_TABLE} WHERE scope = %s", (scope,)
        ):
            vector = unpack(bytes(blob)) if blob is not None else None
            if vector is None or len(vector) != dims:
                missing.append((seq, text))
                continue
            keys.append(seq)
            vectors.append(vector)
        for start in range(0, len(missing), 256):
            batch = missing[start : start + 256]
            embedded = self.embedder.embed([text for _, text in batch])
            with connection.transaction():
                for (seq, _), raw in zip(batch, embedded, strict=False):
                    vector = unpack(pack(normalised([float(x) for x in raw])))
                    connection.execute(
                        f"UPDATE {_TABLE} SET embedding = %s WHERE seq = %s",
                        (vector.tobytes(), seq),
                    )
                    keys.append(seq)
                    vectors.append(vector)
        index = VectorIndex(keys, vectors, use_numpy=self.use_numpy)
        with self._lock:
            self._indexes[scope] = (version, index)
        return index

    def __repr__(self) -> str:
        return f"PostgresMemory({_shown(self.url)!r}, embedder={self.embedder!r})"


def _entry(row: Any, score: float | None = None) -> MemoryEntry:
    from agentensemble.memory.store import utc

    _, entry_id, scope, text, metadata, created = row
    return MemoryEntry(
        id=entry_id,
        scope=scope,
        text=text,
        metadata=metadata if isinstance(metadata, dict) else json.loads(metadata),
        created_at=utc(created),
        score=score,
    )


__all__ = ["PostgresMemory"]
