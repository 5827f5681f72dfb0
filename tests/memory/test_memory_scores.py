"""A hit's ``score`` has one scale on every store: 0 to 1, the best match of a search near 1.0
(times the recency weight, 0.8 to 1.0), whatever the store's size or the ranking behind it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def test_scores_run_from_0_to_1_with_the_best_match_near_1(make_store: Callable[..., Any]) -> None:
    store = make_store()
    store.add("kb", "Refunds are paid back to the card used for the order")
    store.add("kb", "Orders ship from Lyon on weekdays")
    store.add("kb", "The card terminal accepts contactless payments")

    hits = store.search("kb", "how are refunds paid back?", limit=3)

    assert hits[0].text.startswith("Refunds are paid back")
    assert all(hit.score is not None and 0.0 < hit.score <= 1.0 for hit in hits)
    assert hits[0].score >= 0.79  # a fresh entry's recency weight is 1.0, an old one's 0.8
