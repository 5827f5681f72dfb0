"""Natural-language queries turned into search terms: words only, so nothing a user or a model
types (quotes, ``*``, ``NEAR``, ``-``, ``:``, brackets, any unicode) can reach a search engine as
an operator. Terms are OR-ed: ranking, not all-words-required, decides what comes first."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
#: At most this many distinct terms of a query are searched (a task description can be long).
MAX_TERMS = 32
#: Very common English words: they match nearly everything and only slow the search down.
_COMMON = (
    "a an and are as at be but by can do does for from has have how i in into is it its me my "
    "not of on or our so than that the their them then there these they this to was we were "
    "what when where which who why will with you your"
)
STOPWORDS = frozenset(_COMMON.split())


def query_terms(query: str) -> list[str]:
    """The distinct lower-cased words of ``query`` worth searching for, in order."""
    if not isinstance(query, str):
        raise ValueError(f"a memory query must be a string; got {type(query).__name__}")
    seen: dict[str, None] = {}
    words = [w.lower() for w in _WORD.findall(query)]
    kept = [w for w in words if w not in STOPWORDS] or words  # a query of only stopwords
    for word in kept:
        seen.setdefault(word, None)
        if len(seen) >= MAX_TERMS:
            break
    return list(seen)


def fts5_match(terms: list[str]) -> str:
    """An FTS5 MATCH expression: each term a quoted string (``\\w+`` holds no quote), OR-ed."""
    return " OR ".join(f'"{term}"' for term in terms)


__all__ = ["MAX_TERMS", "STOPWORDS", "fts5_match", "query_terms"]
