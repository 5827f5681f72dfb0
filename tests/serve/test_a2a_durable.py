"""a2a_app(..., durable=runtime): every A2A task is a durable run of the runtime (recorded in
its database like any durable run), with the same task states and answer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the checkout under test, whatever the environment's agentensemble was installed from
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}
APP = Path(__file__).with_name("_durable_a2a.py")


def test_an_a2a_task_is_a_durable_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(APP), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "STATE TASK_STATE_COMPLETED" in lines, done.stdout
    assert "ANSWER durable a2a answer" in lines
    assert "RUNS [('explainer', 'SUCCESS')]" in lines
    refused = [line for line in lines if line.startswith("REFUSED")]
    assert refused and "cannot serve 'unregistered' durably" in refused[0]


def test_cancel_task_cancels_the_durable_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(APP), str(tmp_path), "cancel"],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "IN MODEL TURN True" in lines, done.stdout
    assert "TASK TASK_STATE_CANCELED" in lines
    assert "SLOW RUN CANCELLED" in lines, done.stdout
