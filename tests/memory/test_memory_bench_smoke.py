"""benchmarks/memory.py at its smallest size, so the script cannot rot between recordings.
Nothing is timed against a target (the figures live in benchmarks/RESULTS.md and results.d);
the test checks that each store was filled, searched and reported. Left out of the default run:
``make bench-smoke`` runs it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from agentensemble.memory import HashingEmbedder, SQLiteMemory

pytestmark = pytest.mark.bench_smoke

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_bench"] = module
    spec.loader.exec_module(module)
    return module


def test_each_sqlite_store_is_filled_searched_and_reported(
    bench: ModuleType, tmp_path: Path
) -> None:
    rows: list[list[str]] = []
    bench.measure(SQLiteMemory(tmp_path / "lexical.sqlite", embedder=None), [250], "sqlite", rows)
    hybrid = SQLiteMemory(tmp_path / "hybrid.sqlite", embedder=HashingEmbedder())
    bench.measure(hybrid, [250], "sqlite+hashing", rows)

    assert [row[:2] for row in rows] == [["sqlite", "250"], ["sqlite+hashing", "250"]]
    for row in rows:  # add, search, CPU, max and first-search figures, all measured
        assert all(float(value) > 0 for value in row[2:])
    assert "| sqlite+hashing | 250 |" in bench.table(rows)
