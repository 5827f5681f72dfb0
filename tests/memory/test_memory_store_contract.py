"""Every store keeps the MemoryStore contract: SQLite and Postgres, lexical and with an embedder."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from agentensemble.memory import MemoryEntry, MemoryStore

StoreFactory = Callable[..., Any]  # the make_store fixture (conftest.py)


def test_a_store_is_a_memory_store(store: Any) -> None:
    assert isinstance(store, MemoryStore)


def test_add_returns_the_entry_and_entries_lists_them_oldest_first(store: Any) -> None:
    first = store.add("notes", "The office opens at nine", metadata={"by": "ops"})
    second = store.add("notes", "Lunch is served at noon")
    assert isinstance(first, MemoryEntry)
    assert (first.scope, first.text, first.metadata, first.score) == (
        "notes",
        "The office opens at nine",
        {"by": "ops"},
        None,
    )
    assert first.created_at.tzinfo is not None
    assert [e.id for e in store.entries("notes")] == [first.id, second.id]
    assert store.entries("elsewhere") == []


def test_scopes_are_matched_exactly(store: Any) -> None:
    store.add("user-4", "prefers tea")
    store.add("user-42", "prefers coffee")
    assert [e.text for e in store.search("user-42", "prefers")] == ["prefers coffee"]
    assert [e.text for e in store.entries("user-4")] == ["prefers tea"]


def test_search_ranks_the_entry_with_the_rare_word_first_without_requiring_all_words(
    store: Any,
) -> None:
    for n in range(8):
        store.add("kb", f"The customer called about the invoice number {n}")
    store.add("kb", "Alice asked for a refund of her subscription")
    hits = store.search("kb", "what did the customer Alice want about the refund?", limit=3)
    assert hits[0].text == "Alice asked for a refund of her subscription"
    assert all(isinstance(hit.score, float) for hit in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_search_prefers_the_newer_of_two_equally_good_entries(store: Any) -> None:
    store.add("kb", "the deploy window is Tuesday", metadata={"n": 1})
    store.add("kb", "the deploy window is Tuesday", metadata={"n": 2})
    assert [e.metadata["n"] for e in store.search("kb", "deploy window", limit=2)] == [2, 1]


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced quote',
        "NEAR(alice refund, 2)",
        "alice* OR -refund AND NOT (x",
        "column:text ^start {a b}",
        "日本語のテキスト 😀 émigré",
        "'; DROP TABLE memory_entries; --",
        "\\ & | ! : < > ( ) [ ]",
        "",
        "   ",
        "a" * 5000,
    ],
)
def test_queries_with_operators_quotes_and_unicode_never_raise(store: Any, query: str) -> None:
    store.add("kb", "Alice asked for a refund; émigré notes in 日本語")
    assert isinstance(store.search("kb", query), list)


def test_unicode_text_is_found(store: Any) -> None:
    store.add("kb", "Le café ouvre à 8 heures")
    store.add("kb", "東京の天気は晴れ")
    assert store.search("kb", "café")[0].text == "Le café ouvre à 8 heures"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.add("", "text"), "blank"),
        (lambda s: s.add("   ", "text"), "blank"),
        (lambda s: s.search(" ", "query"), "blank"),
        (lambda s: s.entries(""), "blank"),
        (lambda s: s.clear("\n"), "blank"),
        (lambda s: s.prune("", keep_last=1), "blank"),
        (lambda s: s.search("kb", "query", limit=0), "limit"),
        (lambda s: s.search("kb", "query", limit=-3), "limit"),
        (lambda s: s.prune("kb"), "keep_last"),
        (lambda s: s.prune("kb", keep_last=-1), "keep_last"),
        (lambda s: s.add("kb", "   "), "blank"),
        (lambda s: s.add("kb", "ok", metadata={"x": object()}), "JSON"),
        # past a database's 64-bit integers: SQLite's OverflowError, Postgres's DataError
        (lambda s: s.search("kb", "query", limit=2**63), "limit must be at most"),
        (lambda s: s.entries("kb", last=10**30), "limit must be at most"),
        (lambda s: s.prune("kb", keep_last=2**63), "keep_last must be at most"),
        (lambda s: s.search("kb", "query", limit=10**5000), "over 100 digits"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_problem(store: Any, call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(store)


def test_delete_clear_and_prune(store: Any) -> None:
    entries = [store.add("kb", f"note number {n}") for n in range(6)]
    store.add("other", "kept elsewhere")
    assert store.delete(entries[0].id) is True
    assert store.delete(entries[0].id) is False
    assert store.prune("kb", keep_last=2) == 3
    assert [e.text for e in store.entries("kb")] == ["note number 4", "note number 5"]
    assert store.prune("kb", older_than=timedelta(days=1)) == 0
    assert store.prune("kb", older_than=timedelta(0)) == 2
    assert store.clear("other") == 1
    assert store.entries("other") == []


def test_secrets_are_redacted_before_they_are_stored(store: Any) -> None:
    entry = store.add(
        "kb",
        "the key is sk-live-1234567890abcdef and Bearer abcdef123456",
        metadata={"api_key": "k-123456789", "note": "sk-proj-abcdefghijkl"},
    )
    stored = store.entries("kb")[0]
    for shown in (entry, stored):
        assert "sk-live" not in shown.text and "abcdef123456" not in shown.text
        assert shown.metadata == {"api_key": "***", "note": "***"}


@pytest.mark.parametrize(
    ("text", "metadata", "kept", "kept_metadata"),
    [
        ("a tool's output a\x00b", {}, "a tool's output a\ufffdb", {}),
        ("a file named a\udcff.txt", {}, "a file named a\ufffd.txt", {}),
        ("an answer", {"source": "a\x00\udcffb"}, "an answer", {"source": "a\ufffd\ufffdb"}),
        ("an answer", {"k\x00": ["\ud800"]}, "an answer", {"k\ufffd": ["\ufffd"]}),
    ],
    ids=["nul-in-text", "lone-surrogate-in-text", "both-in-metadata", "in-a-key-and-a-list"],
)
def test_text_no_store_can_keep_is_stored_as_replacement_characters_never_a_failed_write(
    store: Any, text: str, metadata: dict[str, Any], kept: str, kept_metadata: dict[str, Any]
) -> None:
    # Postgres refused NUL (psycopg.DataError) and UTF-8 lone surrogates (UnicodeEncodeError,
    # SQLite too): a run's output holding one was never remembered, a session lost the turn
    entry = store.add("kb", text, metadata=metadata)
    (stored,) = store.entries("kb")
    for shown in (entry, stored):
        assert (shown.text, shown.metadata) == (kept, kept_metadata)


@pytest.mark.parametrize("scope", ["a\x00b", "a\ud800b"], ids=["nul", "lone-surrogate"])
def test_a_scope_no_store_can_keep_is_a_value_error_naming_it(store: Any, scope: str) -> None:
    # scopes name data: cleaned, two scopes would become one; refused the same on every store
    for call in (
        lambda: store.add(scope, "text"),
        lambda: store.search(scope, "text"),
        lambda: store.entries(scope),
        lambda: store.clear(scope),
    ):
        with pytest.raises(ValueError, match="NUL characters or lone surrogates"):
            call()


def test_an_id_no_store_can_keep_names_no_entry(store: Any) -> None:
    store.add("kb", "kept")
    assert store.delete("a\x00b") is False and store.delete("\ud800") is False
    assert len(store.entries("kb")) == 1


def test_a_second_store_on_the_same_database_sees_the_first_ones_entries(
    make_store: StoreFactory,
) -> None:
    writer, reader = make_store(), make_store()
    writer.add("kb", "the parking code is 4711")
    assert [e.text for e in reader.search("kb", "parking code")] == ["the parking code is 4711"]
    writer.add("kb", "the parking garage closes at ten")  # the reader's caches see it too
    assert len(reader.search("kb", "parking")) == 2


def test_concurrent_writer_threads_lose_nothing(store: Any) -> None:
    def write(worker: int) -> None:
        for n in range(25):
            store.add("kb", f"worker {worker} note {n}")

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(store.entries("kb")) == 100


@pytest.mark.anyio
async def test_async_variants(store: Any) -> None:
    entry = await store.aadd("kb", "async entries work too")
    assert [e.id for e in await store.asearch("kb", "async entries")] == [entry.id]
    assert [e.id for e in await store.aentries("kb")] == [entry.id]
    await asyncio.gather(*(store.aadd("kb", f"parallel {n}") for n in range(10)))
    assert await store.aprune("kb", keep_last=5) == 6
    assert await store.adelete(entry.id) is False
    assert await store.aclear("kb") == 5


def test_entries_last_reads_only_the_newest_oldest_first(store: Any) -> None:
    added = [store.add("chat", f"exchange {n}").id for n in range(12)]
    assert [e.id for e in store.entries("chat", last=3)] == added[-3:]
    assert [e.id for e in store.entries("chat", last=50)] == added
    assert [e.id for e in store.entries("chat")] == added
    assert store.entries("nothing here", last=3) == []
    for bad in (0, -1, True, "3"):
        with pytest.raises(ValueError, match="limit"):
            store.entries("chat", last=bad)
