"""A durable loop and graph killed mid-way (SIGKILL) resume at the iteration or step where they
stopped: no answered model request is asked again, no completed tool call runs again, and the
run ends with the same output, path and iteration count as a run never killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

APP = Path(__file__).with_name("_loops_app.py")
# loop iteration 1: writer calls note (1), writer answers (2), critic (3); iteration 2: the
# same (4, 5, 6); graph: research (7), answer THIN (8), research again (9), answer (10)
CALLS = [
    "writer", "writer", "critic", "writer", "writer", "critic",
    "research", "answer", "research", "answer",
]  # fmt: skip


def run_app(db: str, workdir: Path, run_id: str, kill_at: int, *extra: str) -> Any:
    return subprocess.run(
        [sys.executable, str(APP), db, str(workdir), run_id, str(kill_at), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def finished(done: Any) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kill_at", [3, 5, 9])
def test_a_loop_and_a_graph_resume_where_they_stopped(tmp_path: Path, kill_at: int) -> None:
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    expected = finished(run_app(f"sqlite:///{baseline}/runs.sqlite", baseline, "loop-1", 0))
    assert (baseline / "calls.log").read_text().split() == CALLS
    assert expected["loops"] == {"polish": [2, "until"]}
    assert expected["graphs"] == {"support": ["research", "answer", "research", "answer"]}

    db = f"sqlite:///{tmp_path}/runs.sqlite"
    crashed = run_app(db, tmp_path, "loop-1", kill_at)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    resumed = finished(run_app(db, tmp_path, "loop-1", 0))

    assert resumed == expected
    # every call before the kill was answered and kept; only the one the kill hit came again
    calls = (tmp_path / "calls.log").read_text().split()
    assert calls == CALLS[:kill_at] + CALLS[kill_at - 1 :]
    assert (tmp_path / "effects.log").read_text().split() == ["v1", "v2"]


def test_a_parallel_loop_and_graph_resume_with_the_same_checkpoints(tmp_path: Path) -> None:
    """The loop and the graph run at once, so their calls interleave in any order; each task
    run's checkpoints are numbered by its slot, fixed before the run, so a recovery finds them
    whatever order the branches resume in (no divergence, same result). A call in flight on
    the other branch when the process died may be asked again; nothing else is."""
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    done = run_app(f"sqlite:///{baseline}/runs.sqlite", baseline, "par-1", 0, "parallel")
    expected = finished(done)
    assert Counter((baseline / "calls.log").read_text().split()) == Counter(CALLS)

    db = f"sqlite:///{tmp_path}/runs.sqlite"
    crashed = run_app(db, tmp_path, "par-1", 6, "parallel")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    resumed = finished(run_app(db, tmp_path, "par-1", 0, "parallel"))

    assert resumed == expected
    repeated = Counter((tmp_path / "calls.log").read_text().split()) - Counter(CALLS)
    assert 1 <= sum(repeated.values()) <= 2, repeated
