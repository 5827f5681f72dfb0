"""Knowledge sync's one write per file: replace a file's chunks, atomically, unless they are
already its current content.

Two processes syncing the same knowledge at once both see a new or changed file. Each replaces
that file's chunks in one transaction that first reads, under the store's write lock (SQLite's
``BEGIN IMMEDIATE``; a Postgres advisory lock keyed by scope and file), which content the
chunks there hold: the second finds the first one's chunks of the same SHA-256 and writes
nothing. So a file's chunks are never doubled and a reader never sees half of them. Another
store (any object with the MemoryStore methods) gets a delete-then-add without that guarantee.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from agentensemble.memory.embedders import embed_one
from agentensemble.memory.entry import MemoryEntry
from agentensemble.memory.store import MemoryStore, stored_metadata, stored_text

Chunk = tuple[str, dict[str, Any]]


def replace_source(
    store: MemoryStore,
    scope: str,
    source: str,
    digest: str,
    chunks: list[Chunk],
    old: list[MemoryEntry],
) -> bool:
    """Put ``chunks`` (text, metadata) in place of the chunks of ``source`` in ``scope``, unless
    those already have ``digest``; whether it wrote. ``old``: the chunks seen before (used only
    by stores without a transaction of their own)."""
    from agentensemble.memory.postgres import PostgresMemory
    from agentensemble.memory.sqlite import SQLiteMemory

    if isinstance(store, SQLiteMemory | PostgresMemory):
        rows = _rows(store, scope, chunks)
        if isinstance(store, SQLiteMemory):
            return _sqlite(store, scope, source, digest, rows)
        return _postgres(store, scope, source, digest, rows)
    for entry in old:
        store.delete(entry.id)
    for text, metadata in chunks:
        store.add(scope, text, metadata=metadata)
    return True


def _rows(store: Any, scope: str, chunks: list[Chunk]) -> list[tuple[Any, ...]]:
    """Rows as ``add`` would write them (redacted, embedded), built before any lock is held."""
    rows = []
    for text, metadata in chunks:
        kept = stored_text(text)
        vector = None
        if store.embedder is not None:
            from agentensemble.memory._vectors import pack

            vector = pack(embed_one(store.embedder, kept))
        rows.append((uuid.uuid4().hex, scope, kept, stored_metadata(metadata), time.time(), vector))
    return rows


_SQLITE_FOUND = (
    "SELECT id, json_extract(metadata, '$.sha256') FROM memory_entries WHERE scope = ? "
    "AND json_extract(metadata, '$.kind') = 'knowledge' "
    "AND json_extract(metadata, '$.source') = ?"
)


def _sqlite(store: Any, scope: str, source: str, digest: str, rows: list[tuple[Any, ...]]) -> bool:
    with store._writing(scope) as connection:
        found = connection.execute(_SQLITE_FOUND, (scope, source)).fetchall()
        if found and all(sha == digest for _, sha in found):
            return False
        connection.executemany("DELETE FROM memory_entries WHERE id = ?", [(i,) for i, _ in found])
        connection.executemany(
            "INSERT INTO memory_entries (id, scope, text, metadata, created_at, embedding) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
    return True


def _postgres(
    store: Any, scope: str, source: str, digest: str, rows: list[tuple[Any, ...]]
) -> bool:
    from agentensemble.memory.postgres import _TABLE

    connection = store._connection()
    with connection.transaction():
        connection.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 7301947))", (f"{scope}\x1f{source}",)
        )
        found = connection.execute(
            f"SELECT id, metadata->>'sha256' FROM {_TABLE} WHERE scope = %s "
            "AND metadata->>'kind' = 'knowledge' AND metadata->>'source' = %s",
            (scope, source),
        ).fetchall()
        if found and all(sha == digest for _, sha in found):
            return False
        connection.execute(f"DELETE FROM {_TABLE} WHERE id = ANY(%s)", ([i for i, _ in found],))
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {_TABLE} (id, scope, text, metadata, created_at, embedding) "
                "VALUES (%s, %s, %s, %s::jsonb, %s, %s)",
                rows,
            )
        store._bump(connection, scope, len(rows) - len(found))
    return True


__all__ = ["replace_source"]
