"""benchmarks/concurrency.py at its smallest size, so the script cannot rot between recordings.

Nothing is timed against a target (the figures live in benchmarks/results.d/openai-lane.md); the
test checks that every variant ran against the recording server, which counted exactly two
requests a run, and that the table, the ratios and the fresh-process lines were printed.
``make bench-smoke`` runs it (left out of the default run).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench_smoke

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "concurrency.py"


@pytest.mark.timeout(900)  # fresh processes on a loaded machine: slow, not stuck
def test_every_variant_runs_at_once_and_the_ratios_are_printed() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "4", "--delay", "0.01", "--fresh", "1"],
        capture_output=True,
        text=True,
        timeout=840,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 4 |")]
    assert [row.split("|")[2].strip() for row in rows] == [
        "ours",
        "ours-bare",
        "ours-offline",
        "llm",
        "openai-sdk",
        "floor",
    ]
    for row in rows:
        wall, runs_per_s, cpu = (float(cell) for cell in row.split("|")[3:6])
        assert wall > 0 and runs_per_s > 0 and cpu > 0
    assert re.search(r"4 at once, ours/floor: CPU per run [0-9.]+x", done.stdout)
    assert re.search(r"4 at once, ours-bare/floor: CPU per run [0-9.]+x", done.stdout)
    assert "load before:" in done.stdout and "load after:" in done.stdout
    fresh = [line for line in done.stdout.splitlines() if line.startswith("| ours (LLM")]
    assert len(fresh) == 1 and float(fresh[0].split("|")[2]) > 0


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "variants",
    [
        ["ours-frozen"],  # docs/models.md's gc.freeze advice
        ["litellm", "litellm-httpx"],  # our Ensemble on litellm's lane, on both its transports
    ],
    ids=["frozen", "litellm"],
)
def test_the_variants_on_request_run_the_same_job(variants: list[str]) -> None:
    """Variants left out of the default list run the same job: two requests a run (the script
    checks the server's count and fails otherwise), a CPU figure each."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "4", "--delay", "0.01", "--variants", *variants],
        capture_output=True,
        text=True,
        timeout=840,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 4 |")]
    assert [row.split("|")[2].strip() for row in rows] == variants
    assert all(float(row.split("|")[5]) > 0 for row in rows)  # CPU per run
