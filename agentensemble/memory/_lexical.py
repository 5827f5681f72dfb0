"""SQLiteMemory's lexical ranking: FTS5 BM25 over the query's words, bounded in cost.

BM25 costs SQLite a score for every entry matching any query word, so what a search costs is
how many entries its words match. Two rules keep that small:

- A word found in more than ``COMMON_SHARE`` of all entries is left out when the query has
  rarer words (it adds almost nothing to the ranking).
- When the words still match more than ``EXACT_MATCHES`` entries, the rare words (each in at
  most ``NARROW_SHARE`` of the entries) choose the candidates: the ``WIDE`` best entries by BM25
  over those words. Each broad word an entry also holds then adds its BM25 weight for a single
  occurrence (its IDF), found by a plain match (no score). If the rare words find fewer than
  the candidates asked for in the scope, the exact BM25 over every word runs instead. So an
  entry sharing the query's rare words still ranks first, and a large store no longer scores
  every entry that shares one of its broad words.

Document frequencies come from the FTS5 vocabulary (stemmed words: a word's count is its longest
indexed prefix's, its porter stem in nearly every case); they change slowly, so they are kept
until the store has grown or shrunk by 10%.
"""

from __future__ import annotations

import math
import sqlite3

from agentensemble.memory._query import fts5_match

COMMON_SHARE = 0.2
EXACT_MATCHES = 5_000
NARROW_SHARE = 0.02
WIDE = 500
_EXACT = (
    "SELECT e.rowid, -bm25(memory_fts) FROM memory_fts "  # FTS drives the join
    "CROSS JOIN memory_entries e ON e.rowid = memory_fts.rowid "
    "WHERE memory_fts MATCH ? AND e.scope = ? "
    "ORDER BY bm25(memory_fts) LIMIT ?"
)


class LexicalRanking:
    """The ranking of one store (its document-frequency cache), for every thread."""

    def __init__(self) -> None:
        self._df: dict[str, int] = {}
        self._total = 0

    def ranked(
        self, connection: sqlite3.Connection, scope: str, terms: list[str], pool: int
    ) -> list[tuple[int, float]]:
        """Up to ``pool`` (rowid, score) of ``scope``, best first."""
        if not terms:
            return []
        total = connection.execute("SELECT max(rowid) FROM memory_entries").fetchone()[0] or 0
        df = self._frequencies(connection, terms, total)
        rare = [t for t in terms if 0 < df[t] <= COMMON_SHARE * total]
        if rare:
            terms = [t for t in terms if df[t] <= COMMON_SHARE * total]
        if sum(df[t] for t in terms) <= EXACT_MATCHES:
            return _exact(connection, scope, terms, pool)
        narrow = [t for t in terms if df[t] <= NARROW_SHARE * total]
        broad = [t for t in terms if t not in narrow]
        if not broad or not any(df[t] for t in narrow):
            return _exact(connection, scope, terms, pool)
        candidates = _exact(connection, scope, narrow, WIDE)
        if len(candidates) < pool:
            return _exact(connection, scope, terms, pool)
        scores = dict(candidates)
        for term in broad:  # the entries holding a rare word and this one: no score, no scan
            weight = _idf(total, df[term])
            both = f"({fts5_match(narrow)}) AND {fts5_match([term])}"
            for (rowid,) in connection.execute(
                "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (both,)
            ):
                if rowid in scores:
                    scores[rowid] += weight
        return sorted(scores.items(), key=lambda pair: -pair[1])[:pool]

    def _frequencies(
        self, connection: sqlite3.Connection, terms: list[str], total: int
    ) -> dict[str, int]:
        """How many entries hold each term (0: none, as far as the vocabulary tells)."""
        if abs(total - self._total) > 0.1 * max(total, 1):
            self._df, self._total = {}, total
        known = self._df
        unknown = [term for term in terms if term not in known]
        if unknown:
            prefixes = sorted(
                {t[:k] for t in unknown for k in range(max(2, len(t) - 4), len(t) + 1)}
            )
            marks = ",".join("?" * len(prefixes))
            counts = dict(
                connection.execute(
                    f"SELECT term, doc FROM memory_vocab WHERE term IN ({marks})", prefixes
                )
            )
            for term in unknown:
                stems = [term[:k] for k in range(len(term), max(1, len(term) - 5), -1)]
                found = [counts[stem] for stem in stems if stem in counts]
                known[term] = int(found[0]) if found else 0
        return {term: known[term] for term in terms}


def _exact(
    connection: sqlite3.Connection, scope: str, terms: list[str], limit: int
) -> list[tuple[int, float]]:
    rows = connection.execute(_EXACT, (fts5_match(terms), scope, limit))
    return [(int(rowid), float(score)) for rowid, score in rows]


def _idf(total: int, count: int) -> float:
    """FTS5's BM25 inverse document frequency of a word in ``count`` of ``total`` entries."""
    return max(math.log((total - count + 0.5) / (count + 0.5)), 1e-6)


__all__ = ["COMMON_SHARE", "EXACT_MATCHES", "LexicalRanking"]
