"""Vectors stored beside entries and searched by brute-force cosine (no vector database).

Vectors are normalised when stored, so cosine is a dot product. Stdlib only: a scope's vectors
are kept in memory (invalidated when the scope changes) and scanned with ``sum(map(mul, ...))``;
when numpy is importable it does the scan instead (see benchmarks/RESULTS.md for both).
Lexical and vector scores are combined by ``fuse``.
"""

from __future__ import annotations

import heapq
import importlib
import operator
from array import array
from collections.abc import Sequence
from typing import Any

#: Share of the lexical ranking in a hybrid score (the rest is vector similarity).
LEXICAL_WEIGHT = 0.6
#: Vector matches below this cosine are noise (hash collisions, unrelated texts) and dropped.
MIN_SIMILARITY = 0.1


def pack(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def unpack(blob: bytes) -> array[float]:
    values = array("f")
    values.frombytes(blob)
    return values


def _numpy() -> Any:
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


class VectorIndex:
    """One scope's vectors (keys and rows), scanned for the best cosine matches.

    With numpy the rows live in one float32 buffer with room to grow: ``extended`` writes the
    rows added since into that room and returns a new index over more of the same buffer, so a
    search after an ``add`` reads the new entries only, not the whole scope again. Without
    numpy the vectors are kept by column, and only the query's non-zero dimensions are scanned
    (one C-level ``map`` pass over all entries per dimension): a short query embedded by
    ``HashingEmbedder`` touches a few dozen of its 256 dimensions.
    """

    def __init__(
        self, keys: list[Any], vectors: Sequence[array[float] | bytes], use_numpy: bool = True
    ) -> None:
        """``vectors``: float32 arrays, or their bytes as stored (read as they are: no float
        object per value)."""
        self.keys = keys
        self.dims = len(_raw(vectors[0])) // 4 if vectors else 0
        self._use_numpy = use_numpy
        self._buffer: Any = None
        self._matrix: Any = None
        self._columns: list[array[float]] = []
        numpy = _numpy() if use_numpy else None
        if numpy is not None and vectors:
            self._buffer = _grown(numpy, None, 0, len(vectors), self.dims)
            self._buffer[: len(vectors)] = _rows(numpy, vectors, self.dims)
            self._matrix = self._buffer[: len(vectors)]
        elif vectors:  # one flat array, then every dims-th value: no float objects per value
            flat = array("f", b"".join(map(_raw, vectors)))
            self._columns = [flat[dim :: self.dims] for dim in range(self.dims)]

    def __len__(self) -> int:
        return len(self.keys)

    def extended(self, keys: list[Any], vectors: Sequence[array[float] | bytes]) -> VectorIndex:
        """This index and ``vectors`` (of the same dimensions) after it. The caller extends
        only the newest index of a scope (under its lock): each extension writes past every
        earlier index's rows, so an index a search still holds never changes."""
        if not vectors:
            return self
        if not self.keys:
            return VectorIndex(list(keys), vectors, use_numpy=self._use_numpy)
        grown = object.__new__(VectorIndex)
        grown.keys, grown.dims, grown._use_numpy = [*self.keys, *keys], self.dims, self._use_numpy
        grown._buffer, grown._matrix, grown._columns = None, None, self._columns
        count, total = len(self.keys), len(self.keys) + len(vectors)
        if self._buffer is not None:
            numpy = _numpy()
            grown._buffer = _grown(numpy, self._buffer, count, total, self.dims)
            grown._buffer[count:total] = _rows(numpy, vectors, self.dims)
            grown._matrix = grown._buffer[:total]
        else:  # the columns grow in place: an older index scans only its own len(keys) rows
            flat = array("f", b"".join(map(_raw, vectors)))
            for dim, column in enumerate(self._columns):
                column.extend(flat[dim :: self.dims])
        return grown

    def top(self, query: Sequence[float], count: int) -> list[tuple[Any, float]]:
        """The ``count`` keys most similar to ``query`` (cosine at least ``MIN_SIMILARITY``),
        best first."""
        if not self.keys:
            return []
        if self._matrix is not None:
            numpy = _numpy()
            # einsum runs in this thread; BLAS (``@``) starts a thread pool that, on a busy
            # machine, made the same product four times slower (benchmarks/RESULTS.md)
            scores = numpy.einsum("ij,j->i", self._matrix, numpy.asarray(query, numpy.float32))
            count = min(count, len(scores))
            best = numpy.argpartition(-scores, count - 1)[:count]
            pairs = [(self.keys[i], float(scores[i])) for i in best]
        else:
            totals: list[float] = [0.0] * len(self.keys)
            add = operator.add
            for dim, weight in enumerate(query):
                if weight != 0.0 and dim < len(self._columns):
                    totals = list(map(add, totals, map(float(weight).__mul__, self._columns[dim])))
            best = heapq.nlargest(count, range(len(totals)), key=totals.__getitem__)
            pairs = [(self.keys[i], totals[i]) for i in best]
        return sorted((p for p in pairs if p[1] >= MIN_SIMILARITY), key=lambda p: -p[1])


def _raw(vector: array[float] | bytes) -> bytes:
    return vector if isinstance(vector, bytes) else vector.tobytes()


def _rows(numpy: Any, vectors: Sequence[array[float] | bytes], dims: int) -> Any:
    return numpy.frombuffer(b"".join(map(_raw, vectors)), numpy.float32).reshape(len(vectors), dims)


def _grown(numpy: Any, buffer: Any, used: int, needed: int, dims: int) -> Any:
    """``buffer`` when it has room for ``needed`` rows, else a bigger one holding its first
    ``used`` rows (a quarter more than needed: appends cost amortised O(1) a row)."""
    if buffer is not None and len(buffer) >= needed:
        return buffer
    bigger = numpy.empty((max(needed + needed // 4, 64), dims), numpy.float32)
    if buffer is not None:
        bigger[:used] = buffer[:used]
    return bigger


def relative(lexical: Sequence[tuple[Any, float]]) -> dict[Any, float]:
    """Lexical scores divided by the best one: 1.0 for the best match of this search, so a
    score reads the same whatever the store's size (raw BM25 values here are as small as 1e-6)."""
    best = max((score for _, score in lexical), default=0.0)
    return {key: score / best for key, score in lexical} if best > 0 else {}


def fuse(
    lexical: Sequence[tuple[Any, float]], semantic: Sequence[tuple[Any, float]]
) -> dict[Any, float]:
    """Lexical and vector scores combined: ``LEXICAL_WEIGHT * lexical / best lexical +
    (1 - LEXICAL_WEIGHT) * cosine``. Relative lexical scores keep BM25's knowledge of which
    words are rare; an entry sharing no word with the query still scores by similarity."""
    scores = {key: LEXICAL_WEIGHT * score for key, score in relative(lexical).items()}
    for key, cosine in semantic:
        scores[key] = scores.get(key, 0.0) + (1.0 - LEXICAL_WEIGHT) * max(0.0, cosine)
    return scores


__all__ = [
    "LEXICAL_WEIGHT",
    "MIN_SIMILARITY",
    "VectorIndex",
    "fuse",
    "pack",
    "relative",
    "unpack",
]
