"""examples/evals/ runs offline: the Python walk-through shows the regression it plants."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import agentensemble
from agentensemble.evals import Dataset

REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent
EXAMPLES = REPO_ROOT / "examples" / "evals"


def test_the_capitals_walk_through_runs_offline_and_finds_the_regression() -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "AGENTENSEMBLE_MODEL")
    }
    env["PYTHONPATH"] = str(REPO_ROOT)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "capitals.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Offline demo: no API key found" in out
    assert "PASSED: 4/4 cases (100%)" in out
    assert "regressed: australia (runs passed: 2/2 -> 0/2)" in out
    assert "Regressions: australia, canada" in out
    assert "Safe to ship: False" in out
    page = Path(out.split("HTML report: ", 1)[1].strip())
    assert "Sydney" in page.read_text()


def test_the_example_datasets_read() -> None:
    for name in ("dataset.yaml", "capitals.yaml"):
        assert Dataset.from_file(EXAMPLES / name).cases
