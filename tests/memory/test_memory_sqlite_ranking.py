"""SQLiteMemory's bounded lexical ranking (memory/_lexical.py) on a store made "large" by
lowering its thresholds: rare words choose the candidates, broad words still add to their
score, and too few rare matches in the scope fall back to the exact BM25 over every word."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentensemble.memory import SQLiteMemory, _lexical


@pytest.fixture
def store(tmp_path: Path) -> SQLiteMemory:
    made = SQLiteMemory(tmp_path / "memory.sqlite")
    for n in range(300):  # "kettle" in one entry of eight: a broad word here
        made.add("support", f"note {n} about an order" + (" kettle" if n % 8 == 0 else ""))
    for n in range(24):  # "Zebulon" in 25 entries: a rare word
        made.add("support", f"Zebulon note {n} about an order")
    made.add("support", "Zebulon note about an order kettle")
    made.add("support", "Quixote note about an order")
    made.add("support", "Quixote asked again")
    made.add("other", "Zebulon kettle Quixote in another scope")
    return made


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thresholds of a large store, for a small one: a query matching more than 10 entries
    takes the bounded path; a word in at most a tenth of the entries is rare."""
    monkeypatch.setattr(_lexical, "EXACT_MATCHES", 10)
    monkeypatch.setattr(_lexical, "NARROW_SHARE", 0.1)


def exact(
    store: SQLiteMemory, query: str, limit: int, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    with monkeypatch.context() as patch:
        patch.setattr(_lexical, "EXACT_MATCHES", 10**9)
        return [e.text for e in store.search("support", query, limit=limit)]


def test_rare_words_choose_and_broad_words_order_the_candidates(
    store: SQLiteMemory, large: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranked_by: list[list[str]] = []
    real = _lexical._exact

    def watched(connection: Any, scope: str, terms: list[str], limit: int) -> Any:
        ranked_by.append(terms)
        return real(connection, scope, terms, limit)

    monkeypatch.setattr(_lexical, "_exact", watched)
    found = store.search("support", "Zebulon kettle", limit=5)

    assert ranked_by == [["zebulon"]]  # BM25 over the rare word only; kettle added after
    assert found[0].text == "Zebulon note about an order kettle"  # the rare and the broad word
    assert all("Zebulon" in e.text for e in found)  # no entry with the broad word only
    assert all(isinstance(e.score, float) and e.score > 0 for e in found)
    assert found[0].text == exact(store, "Zebulon kettle", 1, monkeypatch)[0]


def test_too_few_rare_matches_in_the_scope_fall_back_to_every_word(
    store: SQLiteMemory, large: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    bounded = [e.text for e in store.search("support", "Quixote kettle", limit=8)]

    assert bounded == exact(store, "Quixote kettle", 8, monkeypatch)
    assert bounded[:2] == ["Quixote asked again", "Quixote note about an order"]
    assert "Zebulon kettle Quixote in another scope" not in bounded
