"""SQLiteMemory at size: a search after new entries reads only those entries' vectors (the cached
scope grows in place), and ranks exactly as a store reading the whole scope afresh would, through
adds, removals and another process's (here: another store's) writes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from agentensemble.memory import HashingEmbedder, SQLiteMemory
from agentensemble.memory._vectors import VectorIndex, pack, unpack

WORDS = ["kettle", "toaster", "refund", "invoice", "shipping", "courier", "parcel", "warranty"]
WORDS += ["repair", "order", "account", "password", "payment", "card", "discount", "coupon"]
WORDS += ["damaged", "broken", "late", "missing", "tracking", "warehouse"]
QUERIES = ["broken kettle refund", "late parcel tracking", "card payment coupon", "warehouse"]


def _note(rng: random.Random, n: int) -> str:
    return f"note {n}: " + " ".join(rng.choices(WORDS, k=rng.randint(3, 9)))


def _ranked(store: SQLiteMemory) -> list[list[tuple[str, float]]]:
    return [
        [(e.id, e.score or 0.0) for e in store.search("kb", query, limit=8)] for query in QUERIES
    ]


def _same(cached: list[list[tuple[str, float]]], fresh: list[list[tuple[str, float]]]) -> bool:
    """The same entries in the same order with the same scores (up to the recency weight's
    drift between the two searches: about 5e-8 a second)."""
    ids = [[key for key, _ in hits] for hits in cached]
    scores = [score for hits in cached for _, score in hits]
    return ids == [[key for key, _ in hits] for hits in fresh] and scores == pytest.approx(
        [score for hits in fresh for _, score in hits], abs=1e-6
    )


def _fresh(path: Path, use_numpy: bool) -> list[list[tuple[str, float]]]:
    """The ranking of a store that has cached nothing yet (reads every vector of the scope)."""
    fresh = SQLiteMemory(path, embedder=HashingEmbedder())
    fresh.use_numpy = use_numpy
    try:
        return _ranked(fresh)
    finally:
        fresh.close()


@pytest.mark.parametrize("use_numpy", [True, False], ids=["numpy", "pure-python"])
def test_a_cached_scope_ranks_as_a_fresh_read_through_adds_and_removals(
    tmp_path: Path, use_numpy: bool
) -> None:
    if use_numpy:
        pytest.importorskip("numpy")
    path = tmp_path / "memory.sqlite"
    store = SQLiteMemory(path, embedder=HashingEmbedder())
    store.use_numpy = use_numpy
    other = SQLiteMemory(path, embedder=HashingEmbedder())  # a second writer on the same file
    rng = random.Random(5)
    ids = [store.add("kb", _note(rng, n)).id for n in range(2_000)]
    assert _same(_ranked(store), _fresh(path, use_numpy))

    steps = [
        lambda: store.add("kb", "the broken kettle needs a refund today"),
        lambda: other.add("kb", "late parcel, tracking says warehouse"),
        lambda: [store.add("kb", _note(rng, 10_000 + n)) for n in range(300)],  # grows the buffer
        lambda: store.delete(ids[7]),
        lambda: other.add("other", "broken kettle in another scope"),
        lambda: other.prune("kb", keep_last=1_500),
        lambda: store.add("kb", "card payment with a coupon failed"),
    ]
    for step in steps:
        step()
        assert _same(_ranked(store), _fresh(path, use_numpy))
    assert store.search("kb", "broken kettle refund today")[0].text == (
        "the broken kettle needs a refund today"
    )
    assert all(e.scope == "kb" for e in store.search("kb", "broken kettle another scope"))
    store.close()
    other.close()


def test_a_search_after_an_add_reads_only_the_new_entry(tmp_path: Path) -> None:
    store = SQLiteMemory(tmp_path / "memory.sqlite", embedder=HashingEmbedder())
    rng = random.Random(9)
    for n in range(500):
        store.add("kb", _note(rng, n))
    store.search("kb", "broken kettle")  # reads the scope's vectors once
    statements: list[str] = []
    store._connection().set_trace_callback(statements.append)  # sqlite3's own statement hook
    added = store.add("kb", "a kettle arrived broken")
    found = [store.search("kb", "kettle arrived broken") for _ in range(2)]
    vector_reads = [s for s in statements if "SELECT rowid, embedding" in s]

    assert found[0][0].id == added.id and found[1][0].id == added.id
    assert len(vector_reads) == 1  # the new rows, once; the second search reads none
    assert "rowid > 500 AND" in vector_reads[0]  # past the 500 rows it had read
    store.close()


@pytest.mark.parametrize("use_numpy", [True, False], ids=["numpy", "pure-python"])
@pytest.mark.parametrize("first", [0, 1, 70])
def test_an_extended_index_scans_as_one_built_whole_and_the_older_one_is_unchanged(
    use_numpy: bool, first: int
) -> None:
    if use_numpy:
        pytest.importorskip("numpy")
    embedder = HashingEmbedder(dims=32)
    texts = [_note(random.Random(n), n) for n in range(200)]
    vectors = [unpack(pack(v)) for v in embedder.embed(texts)]
    query = embedder.embed(["broken kettle refund"])[0]
    older = VectorIndex(list(range(first)), vectors[:first], use_numpy=use_numpy)
    before = older.top(query, 10)

    grown = older
    for start in range(first, 200, 45):  # past the buffer's room more than once
        grown = grown.extended(list(range(start, start + 45))[: 200 - start], vectors[start:][:45])

    whole = VectorIndex(list(range(200)), vectors, use_numpy=use_numpy)
    assert len(grown) == 200
    assert [k for k, _ in grown.top(query, 10)] == [k for k, _ in whole.top(query, 10)]
    assert older.top(query, 10) == before and len(older) == first
