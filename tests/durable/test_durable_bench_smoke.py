"""benchmarks/durable.py at the smallest sizes, so the script cannot rot between recordings.

Nothing here is timed against a target (speeds live in benchmarks/RESULTS.md); the test checks
that every measurement ran to the end and reported what it measured. A benchmark is not a test of
behaviour, so the module is left out of the default run: ``make bench-smoke`` runs it (CI does).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.bench_smoke

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "durable.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("durable_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["durable_bench"] = module
    spec.loader.exec_module(module)
    return module


def _figure(value: str) -> float:
    found = re.match(r"-?[0-9.]+", value)
    assert found, value
    return float(found.group())


def test_overhead_per_turn_is_measured_for_every_backend_and_mode(
    bench: ModuleType, postgres_server: str, tmp_path: Path
) -> None:
    rows = bench.bench_overhead(postgres_server, tmp_path, rounds=1, turns=2, runs=1)

    names = [name for name, _, _ in rows]
    for mode in ("scripted model", "local HTTP server"):
        for backend in ("plain", "sqlite", "sqlite-full", "postgres"):
            assert f"{mode}: time per turn, {backend}" in names
            assert (
                _figure(dict((n, v) for n, v, _ in rows)[f"{mode}: time per turn, {backend}"]) > 0
            )
        assert f"{mode}: durability overhead per turn, sqlite" in names
    assert all("CPU" in note for _, _, note in rows)


def test_queue_throughput_and_recovery_run_through_real_workers(
    bench: ModuleType, postgres_server: str, tmp_path: Path
) -> None:
    rows = bench.bench_throughput(postgres_server, tmp_path, runs=2, counts=[1], rounds=1)
    rows += bench.bench_recovery(postgres_server, tmp_path, held=1, rescuer=False)

    by_name = {name: (value, note) for name, value, note in rows}
    for backend in ("postgres", "sqlite"):
        value, note = by_name[f"2 queued 2-task runs, 1 worker(s), {backend}"]
        assert _figure(value) > 0 and "last round: 2, back-offs" in note and "CPU" in note
    value, note = by_name["recovery: SIGKILL a worker holding 1 runs, `recover`, all finished"]
    assert _figure(value) > 0
    assert note == "finished by {'recoverer': 1}"  # the process running `recover`


def test_the_durable_section_of_results_is_replaced_and_the_rest_kept(
    bench: ModuleType, tmp_path: Path
) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text(f"# Results\n\nbefore\n\n{bench.START}\nold\n{bench.END}\n\nafter\n")
    args = argparse.Namespace(
        rounds=1, turns=2, queue_runs=2, queue_rounds=1, concurrency=4, baseline=None
    )

    bench.record(bench.render([("a", "1 ms", "n")], 1.0, args), results)
    bench.record(bench.render([("b", "2 ms", "n")], 1.0, args), results)

    text = results.read_text()
    assert text.startswith("# Results\n\nbefore\n\n") and text.endswith("\n\nafter\n")
    assert "\nold\n" not in text and "| a |" not in text and "| b | 2 ms | n |" in text
    assert text.count(bench.START) == 1 and "shared with several developers" in text


def test_the_worker_profile_reports_cpu_by_thread_and_by_database_call(tmp_path: Path) -> None:
    profile = SCRIPT.with_name("durable_profile.py")
    done = subprocess.run(
        [sys.executable, str(profile), "--runs", "3", "--concurrency", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "3 runs" in done.stdout
    assert "worker CPU:" in done.stdout
    assert "DBOS record_operation_result" in done.stdout  # a checkpoint per step, timed
    assert "ours: the run's start read" in done.stdout
    assert "statements:" in done.stdout
