"""Durable runs of the other workflow shapes: a hierarchical team killed mid-way, even in the
middle of a delegation, resumes without asking a worker again for work it had finished (each
model and tool call of a delegated worker is a step of its own) and ends with the same output,
the delegations made before the crash included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

APP = Path(__file__).with_name("_workflows_app.py")
# manager delegates (1), researcher calls note (2) and answers (3), manager delegates (4),
# writer answers (5), manager answers (6)
CALLS = ["manager", "researcher", "researcher", "manager", "writer", "manager"]


def run_app(db: str, workdir: Path, run_id: str, kill_at: int) -> Any:
    return subprocess.run(
        [sys.executable, str(APP), db, str(workdir), run_id, str(kill_at)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def finished(done: Any) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kill_at", [2, 3, 4, 5, 6])
def test_a_hierarchical_run_resumes_without_redoing_a_finished_delegation(
    tmp_path: Path, kill_at: int
) -> None:
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    expected = finished(run_app(f"sqlite:///{baseline}/runs.sqlite", baseline, "team-1", 0))
    assert (baseline / "calls.log").read_text().split() == CALLS

    db = f"sqlite:///{tmp_path}/runs.sqlite"
    crashed = run_app(db, tmp_path, "team-1", kill_at)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    resumed = finished(run_app(db, tmp_path, "team-1", 0))

    assert resumed == expected
    # every call before the kill was answered and kept; only the one the kill hit came again
    calls = (tmp_path / "calls.log").read_text().split()
    assert calls == CALLS[:kill_at] + CALLS[kill_at - 1 :]
    assert (tmp_path / "effects.log").read_text().split() == ["moon"]
