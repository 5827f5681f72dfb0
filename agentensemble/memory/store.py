"""The MemoryStore protocol and the rules every store shares (checks, redaction, async).

A store keeps entries in scopes (any non-blank string, matched exactly) and finds them again
by natural-language query. Stores do blocking I/O; their ``a``-prefixed twins run the same
call in a worker thread so an event loop never waits on a disk or a socket.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol, runtime_checkable

from agentensemble.logging import redact, redact_text
from agentensemble.memory.entry import MemoryEntry

#: Longest text a store accepts in one entry (characters); longer text is an error, not a cut.
MAX_ENTRY_CHARS = 100_000
#: Recency: an entry's relevance is weighted by ``FRESH_WEIGHT + (1 - FRESH_WEIGHT) * f`` where
#: ``f`` halves every ``HALF_LIFE``: among equally relevant entries the newer wins, but a fresh
#: entry never outranks a clearly better match.
FRESH_WEIGHT = 0.8
HALF_LIFE = timedelta(days=30)
#: The largest count (``limit``, ``last``, ``keep_last``) a store takes: far more than a scope
#: holds, far less than SQLite's and Postgres's 64-bit integers.
MAX_COUNT = 1_000_000_000
#: What no store can keep as text: NUL (Postgres refuses it in ``text`` and ``jsonb``) and lone
#: surrogates (UTF-8 cannot encode them: SQLite and Postgres both failed the write).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


@runtime_checkable
class MemoryStore(Protocol):
    """What ``Ensemble(memory=...)``, ``MemoryTool`` and ``Knowledge`` need from a store."""

    def add(
        self, scope: str, text: str, *, metadata: dict[str, Any] | None = None
    ) -> MemoryEntry: ...

    def search(self, scope: str, query: str, *, limit: int = 5) -> list[MemoryEntry]: ...

    def entries(self, scope: str) -> list[MemoryEntry]: ...

    def delete(self, entry_id: str) -> bool: ...

    def clear(self, scope: str) -> int: ...

    def prune(
        self,
        scope: str,
        *,
        keep_last: int | None = None,
        older_than: timedelta | None = None,
    ) -> int: ...

    async def aadd(
        self, scope: str, text: str, *, metadata: dict[str, Any] | None = None
    ) -> MemoryEntry: ...

    async def asearch(self, scope: str, query: str, *, limit: int = 5) -> list[MemoryEntry]: ...


def check_scope(scope: object) -> str:
    """The scope, or ``ValueError`` naming what is wrong with it."""
    if not isinstance(scope, str):
        raise ValueError(f"a memory scope must be a string; got {type(scope).__name__}")
    if not scope.strip():
        raise ValueError("a memory scope must be a non-blank string; got a blank one")
    if _UNSTORABLE.search(scope):
        raise ValueError(
            f"a memory scope must not hold NUL characters or lone surrogates; got {scope!r}"
        )
    return scope


def storable(text: str) -> str:
    """``text`` with what no store can keep (NUL, lone surrogates) as U+FFFD, one each: a
    model's answer or a file name holding them is remembered, never a failed write."""
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text


def unstorable(text: str) -> bool:
    """Whether ``text`` holds what no store keeps: an id like that names no entry."""
    return _UNSTORABLE.search(text) is not None


def _storable_data(value: Any) -> Any:
    """JSON data with every string (dict keys too) made storable."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {
            storable(key) if isinstance(key, str) else key: _storable_data(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_storable_data(item) for item in value]
    return value


def check_limit(limit: object, what: str = "limit") -> int:
    """``limit`` (a count of entries), or ``ValueError`` naming ``what`` is wrong with it."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ValueError(f"{what} must be an integer of at least 1; got {limit!r}")
    if limit < 1:
        raise ValueError(f"{what} must be at least 1; got {_shown(limit)}")
    if limit > MAX_COUNT:  # past a database's integers: a driver's OverflowError or DataError
        raise ValueError(f"{what} must be at most {MAX_COUNT:,}; got {_shown(limit)}")
    return limit


def _shown(number: int) -> str:
    """An integer for an error message: one past Python's 4,300 digits for text cannot be."""
    return str(number) if abs(number) < 10**100 else "a number of over 100 digits"


def check_prune(keep_last: object, older_than: object) -> None:
    if keep_last is None and older_than is None:
        raise ValueError("prune needs keep_last=N, older_than=timedelta(...) or both")
    if keep_last is not None and (
        isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0
    ):
        raise ValueError(f"keep_last must be an integer of at least 0; got {keep_last!r}")
    if keep_last is not None and keep_last > MAX_COUNT:
        raise ValueError(f"keep_last must be at most {MAX_COUNT:,}; got {_shown(keep_last)}")
    if older_than is not None and (
        not isinstance(older_than, timedelta) or older_than < timedelta(0)
    ):
        raise ValueError(f"older_than must be a non-negative timedelta; got {older_than!r}")


def stored_text(text: object) -> str:
    """The text as stored: a string, non-blank, bounded, with secrets redacted and NUL and lone
    surrogates (which no store keeps) as U+FFFD."""
    if not isinstance(text, str):
        raise ValueError(f"memory text must be a string; got {type(text).__name__}")
    if not text.strip():
        raise ValueError("memory text must not be blank")
    if len(text) > MAX_ENTRY_CHARS:
        raise ValueError(
            f"memory text is {len(text)} characters; at most {MAX_ENTRY_CHARS} fit in one entry"
        )
    return storable(redact_text(text))


def stored_metadata(metadata: dict[str, Any] | None) -> str:
    """Metadata as stored: JSON text, secrets redacted (by key and by shape), NUL and lone
    surrogates in its strings and keys as U+FFFD."""
    if metadata is None:
        return "{}"
    if not isinstance(metadata, dict):
        raise ValueError(f"metadata must be a dict; got {type(metadata).__name__}")
    try:
        return json.dumps(_storable_data(redact(metadata)), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as error:
        raise ValueError(f"metadata must be JSON data: {error}") from error


def utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def freshness(created: float, now: float) -> float:
    """The recency weight of an entry written at ``created`` (epoch seconds)."""
    age = max(0.0, now - created)
    decay = math.pow(0.5, age / HALF_LIFE.total_seconds())
    return FRESH_WEIGHT + (1.0 - FRESH_WEIGHT) * decay


class AsyncStoreMethods:
    """``aadd``, ``asearch``, ... for a store whose methods block: each runs in a thread."""

    async def aadd(
        self, scope: str, text: str, *, metadata: dict[str, Any] | None = None
    ) -> MemoryEntry:
        return await asyncio.to_thread(self.add, scope, text, metadata=metadata)  # type: ignore[attr-defined]

    async def asearch(self, scope: str, query: str, *, limit: int = 5) -> list[MemoryEntry]:
        return await asyncio.to_thread(self.search, scope, query, limit=limit)  # type: ignore[attr-defined]

    async def aentries(self, scope: str, *, last: int | None = None) -> list[MemoryEntry]:
        return await asyncio.to_thread(self.entries, scope, last=last)  # type: ignore[attr-defined]

    async def adelete(self, entry_id: str) -> bool:
        return await asyncio.to_thread(self.delete, entry_id)  # type: ignore[attr-defined]

    async def aclear(self, scope: str) -> int:
        return await asyncio.to_thread(self.clear, scope)  # type: ignore[attr-defined]

    async def aprune(
        self,
        scope: str,
        *,
        keep_last: int | None = None,
        older_than: timedelta | None = None,
    ) -> int:
        return await asyncio.to_thread(
            self.prune,  # type: ignore[attr-defined]
            scope,
            keep_last=keep_last,
            older_than=older_than,
        )


def recent_entries(store: MemoryStore, scope: str, last: int) -> list[MemoryEntry]:
    """The newest ``last`` entries of ``scope``, oldest first. Our stores read only those
    (``entries(scope, last=N)``, a LIMIT query): a session of 10,000 exchanges showing its last
    ten cost 57 MB when every entry was loaded. A store of your own that implements only the
    protocol's ``entries(scope)`` still works: its entries are cut here."""
    if _takes_last(type(store)):
        found: list[MemoryEntry] = store.entries(scope, last=last)  # type: ignore[call-arg]
        return found
    return list(store.entries(scope))[-last:]


@functools.cache
def _takes_last(store_type: type) -> bool:
    """Whether ``store_type.entries`` accepts ``last=`` (asked once per store class)."""
    try:
        parameters = inspect.signature(getattr(store_type, "entries")).parameters  # noqa: B009
    except (AttributeError, TypeError, ValueError):
        return False
    return "last" in parameters


def as_store(value: Any, what: str) -> MemoryStore:
    """``value`` if it has a store's methods, else a ``ValueError`` naming ``what``."""
    missing = [
        name for name in ("add", "search", "entries") if not callable(getattr(value, name, None))
    ]
    if isinstance(value, type) or missing:
        raise ValueError(
            f"{what} must be a memory store such as SQLiteMemory(path) from agentensemble.memory; "
            f"got {value!r}"
        )
    return value  # type: ignore[no-any-return]


__all__ = [
    "MAX_COUNT",
    "MAX_ENTRY_CHARS",
    "AsyncStoreMethods",
    "MemoryStore",
    "as_store",
    "check_limit",
    "check_prune",
    "check_scope",
    "freshness",
    "recent_entries",
    "storable",
    "stored_metadata",
    "stored_text",
    "unstorable",
    "utc",
]
