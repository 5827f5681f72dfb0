"""Memory store latency: add and search at 1k, 10k and 100k entries, and the per-task overhead.

Usage: ``python benchmarks/memory.py [--sizes 1000,10000,100000] [--write]``. Stores: SQLite
lexical, SQLite with ``HashingEmbedder`` (pure-Python cosine scan unless numpy is installed),
and Postgres (a real server from the pgserver wheel). Entries are synthetic support notes from
a fixed seed (a 5,000-word vocabulary with Zipf frequencies); each store is filled through its
public ``add``. Figures are medians: ``add`` over 200 adds made at that size, ``search`` over
50 natural-language queries (limit 5); the first search after a change (the hybrid store reads
the scope's vectors then) is reported apart, and so is a search right after an ``add`` (what
task memory does: search, then write), 50 of them. Stores: ``sqlite+local`` is the default
store with the ``local-embeddings`` extra (``LocalEmbedder``, WordLlama). The task overhead
runs one task on a scripted model 60 times with and without memory, interleaved. ``--write``
records the table between the memory markers of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentensemble import Agent, Ensemble, Task  # noqa: E402
from agentensemble.memory import (  # noqa: E402
    HashingEmbedder,
    PostgresMemory,
    SQLiteMemory,
)
from agentensemble.memory.embedders import LocalEmbedder  # noqa: E402
from agentensemble.testing import FunctionChatModel  # noqa: E402

BEGIN, END = "<!-- memory:begin -->", "<!-- memory:end -->"
SCOPE = "customers"
_WORDS = (
    "kettle toaster blender refund invoice shipping delivery courier parcel warranty repair "
    "replacement order account password login email phone address payment card subscription "
    "discount coupon return damaged broken late missing wrong size colour upgrade downgrade "
    "cancel renew billing receipt tracking warehouse Oslo Bergen Lyon Paris Berlin Madrid "
    "Monday Tuesday Wednesday Thursday Friday weekend morning evening urgent priority"
)
WORDS = _WORDS.split()
_NAMES = "Ada Bob Chen Dana Emil Fatima Gustav Hana Ivan Julia Kofi Lena Mateo Nora Omar"
NAMES = _NAMES.split()
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
#: A vocabulary the size of a real support corpus's, used with Zipf frequencies (a few words
#: everywhere, most words rare), so the figures are not those of a 60-word toy language.
VOCABULARY = (
    WORDS
    + sorted({a + b + c for a in _SYLLABLES for b in _SYLLABLES[:12] for c in _SYLLABLES[:6]})[
        :5000
    ]
)
ZIPF = [1.0 / (rank + 1) for rank in range(len(VOCABULARY))]


def note(rng: random.Random, n: int) -> str:
    words = " ".join(rng.choices(VOCABULARY, weights=ZIPF, k=rng.randint(8, 18)))
    return f"Customer {rng.choice(NAMES)} #{n} wrote about {words}."


def question(rng: random.Random) -> str:
    picked = rng.choices(VOCABULARY, weights=ZIPF, k=3)
    return f"What did {rng.choice(NAMES)} say about the {picked[0]} {picked[1]} and {picked[2]}?"


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def fill(store: Any, rng: random.Random, start: int, end: int) -> None:
    for n in range(start, end):
        store.add(SCOPE, note(rng, n))


def measure(store: Any, sizes: list[int], label: str, rows: list[list[str]]) -> None:
    rng = random.Random(7)
    have = 0
    for size in sizes:
        fill(store, rng, have, size - 200)
        adds = []
        for n in range(size - 200, size):
            started = time.perf_counter()
            store.add(SCOPE, note(rng, n))
            adds.append(time.perf_counter() - started)
        have = size
        queries = [question(random.Random(q)) for q in range(50)]
        started = time.perf_counter()
        store.search(SCOPE, queries[0])
        first = time.perf_counter() - started
        searches, cpu = [], []
        for query in queries:
            started, used = time.perf_counter(), time.process_time()
            hits = store.search(SCOPE, query)
            searches.append(time.perf_counter() - started)
            cpu.append(time.process_time() - used)
            assert hits, f"{label}: no hit for {query!r}"
        after_add, after_cpu = [], []  # what task memory does: search, then write
        for n, query in enumerate(queries):
            store.add(SCOPE, note(rng, size + n))
            started, used = time.perf_counter(), time.process_time()
            store.search(SCOPE, query)
            after_add.append(time.perf_counter() - started)
            after_cpu.append(time.process_time() - used)
        have = size + len(queries)
        rows.append(
            [
                label,
                f"{size:,}",
                f"{median_ms(adds):.2f}",
                f"{median_ms(searches):.2f}",
                "server" if label.startswith("postgres") else f"{median_ms(cpu):.2f}",
                f"{max(searches) * 1000:.1f}",
                f"{first * 1000:.1f}",
                f"{median_ms(after_add):.2f}",
                "server" if label.startswith("postgres") else f"{median_ms(after_cpu):.2f}",
            ]
        )
        print(" | ".join(rows[-1]), flush=True)


def overhead(rows: list[list[str]], folder: Path) -> None:
    store = SQLiteMemory(folder / "overhead.sqlite")
    rng = random.Random(3)
    fill(store, rng, 0, 1000)
    model = FunctionChatModel(lambda messages, tools: "Noted.")
    agent = Agent(role="Support", goal="Help", llm=model)
    plain = Ensemble(tasks=[Task(description="Reply about the kettle refund", agent=agent)])
    remembering = Ensemble(
        tasks=[Task(description="Reply about the kettle refund", agent=agent, memory=[SCOPE])],
        memory=store,
    )
    session = Ensemble(
        tasks=[Task(description="Reply about the kettle refund", agent=agent)], memory=store
    )
    runs: dict[str, list[float]] = {"plain": [], "memory": [], "session": []}
    for n in range(60):
        for name, ensemble, kwargs in (
            ("plain", plain, {}),
            ("memory", remembering, {}),
            ("session", session, {"session": "bench"}),
        ):
            started = time.perf_counter()
            ensemble.run(**kwargs)
            if n >= 5:  # warm-up rounds are not counted
                runs[name].append(time.perf_counter() - started)
        store.prune(SCOPE, keep_last=1000)  # the scope stays at 1k entries
    base = median_ms(runs["plain"])
    for name in ("memory", "session"):
        extra = median_ms(runs[name]) - base
        rows.append(
            [
                f"task overhead: {name}",
                "1,000",
                "",
                f"{extra:.2f}",
                "",
                "",
                f"(base {base:.2f})",
                "",
                "",
            ]
        )
        print(" | ".join(rows[-1]), flush=True)


def table(rows: list[list[str]]) -> str:
    head = [
        "store",
        "entries",
        "add median ms",
        "search median ms",
        "search CPU ms",
        "search max ms",
        "first search ms",
        "search after an add, median ms",
        "its CPU ms",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def write(text: str) -> None:
    path = ROOT / "benchmarks" / "RESULTS.md"
    current = path.read_text()
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in current:
        before, rest = current.split(BEGIN, 1)
        current = before + block + rest.split(END, 1)[1]
    else:
        current = current.rstrip() + f"\n\n## Memory stores\n\n{block}\n"
    path.write_text(current)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--stores", default="sqlite,sqlite+hashing,postgres")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[list[str]] = []
    load_before = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        builders: dict[str, Callable[[], Any]] = {
            "sqlite": lambda: SQLiteMemory(folder / "lexical.sqlite"),
            "sqlite+hashing": lambda: SQLiteMemory(
                folder / "hybrid.sqlite", embedder=HashingEmbedder()
            ),
            "sqlite+local": lambda: SQLiteMemory(folder / "local.sqlite", embedder=LocalEmbedder()),
        }
        server = None
        if "postgres" in args.stores:
            import pgserver

            server = pgserver.get_server(str(folder / "pg"), cleanup_mode="stop")
            url = str(server.get_uri())
            builders["postgres"] = lambda: PostgresMemory(url)
        try:
            for name in args.stores.split(","):
                measure(builders[name](), sizes, name, rows)
            overhead(rows, folder)
        finally:
            if server is not None:
                server.cleanup()
    numpy = "numpy" if _has_numpy() else "pure Python"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    text = (
        f"Measured {date.today()} on {platform.machine()}, {os.cpu_count()} cores shared with "
        f"other work (load average {load_before} at the start, {load} at the end), "
        f"Python {platform.python_version()}, SQLite {_sqlite()}; vector scan: {numpy}.\n\n"
        + table(rows)
    )
    print(text)
    if args.write:
        write(text)
    return 0


def _has_numpy() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def _sqlite() -> str:
    import sqlite3

    return sqlite3.sqlite_version


if __name__ == "__main__":
    sys.exit(main())
