"""Recall quality of memory search: recall@5 on a labelled set, lexical against embedders.

Usage: ``python benchmarks/memory_recall.py``. The set is ``benchmarks/data/recall_set.json``
(40 entries, 30 queries, half of them paraphrases sharing no rare word with their answer). Each
ranking is asked for its 5 best entries per query; recall@5 is the share of a query's relevant
entries among them, averaged over the queries (and reported per kind of query). Rankings:

- ``lexical``: ``SQLiteMemory(embedder=None)`` (BM25 over stemmed words);
- ``hashing`` and ``local``: the embedder alone (cosine similarity, no lexical part);
- ``hybrid (hashing)`` and ``hybrid (local)``: ``SQLiteMemory`` with that embedder, i.e. what a
  store does (lexical and cosine fused, see docs/memory.md).

``local`` is ``LocalEmbedder`` (WordLlama, its weights in its wheel); it is skipped, and says so,
when wordllama is not installed (``pip install "agentensemble-py[local-embeddings]"``).
Deterministic: the same figures on every run and machine.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentensemble.memory import HashingEmbedder, SQLiteMemory  # noqa: E402
from agentensemble.memory.embedders import LocalEmbedder  # noqa: E402

SET = ROOT / "benchmarks" / "data" / "recall_set.json"
K = 5

Ranker = Callable[[str], list[int]]


def store_ranker(entries: list[str], embedder: Any) -> Ranker:
    store = SQLiteMemory(":memory:", embedder=embedder)
    index = {store.add("kb", text).id: number for number, text in enumerate(entries)}

    def rank(query: str) -> list[int]:
        return [index[hit.id] for hit in store.search("kb", query, limit=K)]

    return rank


def cosine_ranker(entries: list[str], embedder: Any) -> Ranker:
    vectors = embedder.embed(entries)

    def rank(query: str) -> list[int]:
        [wanted] = embedder.embed([query])
        scores = [sum(a * b for a, b in zip(wanted, vector, strict=True)) for vector in vectors]
        return sorted(range(len(entries)), key=lambda n: -scores[n])[:K]

    return rank


def recall(rank: Ranker, queries: list[dict[str, Any]]) -> float:
    total = 0.0
    for query in queries:
        found = set(rank(query["q"]))
        relevant = set(query["relevant"])
        total += len(found & relevant) / len(relevant)
    return total / len(queries)


def main() -> None:
    data = json.loads(SET.read_text())
    entries: list[str] = data["entries"]
    queries: list[dict[str, Any]] = data["queries"]
    rankers: dict[str, Ranker] = {
        "lexical": store_ranker(entries, None),
        "hashing": cosine_ranker(entries, HashingEmbedder()),
        "hybrid (hashing)": store_ranker(entries, HashingEmbedder()),
    }
    try:
        local = LocalEmbedder()
    except ImportError as error:
        print(f"local: skipped ({error})")
    else:
        rankers["local"] = cosine_ranker(entries, local)
        rankers["hybrid (local)"] = store_ranker(entries, local)
    kinds = sorted({query["kind"] for query in queries})
    print(f"recall@{K} on {len(queries)} queries over {len(entries)} entries ({SET.name})\n")
    header = ["ranking", "all", *kinds]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, rank in rankers.items():
        figures = [recall(rank, queries)]
        figures += [recall(rank, [q for q in queries if q["kind"] == kind]) for kind in kinds]
        print(f"| {name} | " + " | ".join(f"{value:.2f}" for value in figures) + " |")


if __name__ == "__main__":
    main()
