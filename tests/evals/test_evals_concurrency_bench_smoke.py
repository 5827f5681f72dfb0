"""benchmarks/evals_concurrency.py at its smallest size, so the script cannot rot between
recordings. Nothing is timed against a target (the figures live in benchmarks/results.d); the
test checks that every variant ran its runs against the recording server and was reported. Left
out of the default run: ``make bench-smoke`` runs it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.bench_smoke

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "evals_concurrency.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("evals_concurrency_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["evals_concurrency_bench"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(600)  # four child processes on a loaded machine: slow, not stuck
def test_every_variant_runs_its_cases_against_the_recording_server(bench: ModuleType) -> None:
    rows = bench.run([3], list(bench.VARIANTS), delay=0.01)

    assert [row["variant"] for row in rows] == list(bench.VARIANTS)
    for row in rows:  # measure() already checked two requests a run and no wrong answer
        assert row["runs"] == row["done"] == 3 and row["wrong"] == 0
        assert row["runs_per_s"] > 0 and row["cpu_per_run_ms"] > 0 and row["peak_mib"] > 0
    text = bench.table(rows)
    assert "| 3 | evaluate |" in text and "- 3 runs, evaluate/plain: throughput" in text
