"""mcp_server(..., durable=runtime): a served call is a durable run of the runtime (recorded in
its database like any durable run), with the same progress and result."""

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
APP = Path(__file__).with_name("_durable_served.py")


def test_a_served_call_is_a_durable_run(tmp_path: Path) -> None:
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
    assert "RESULT False durable answer" in lines
    assert "PROGRESS ['task 1/1 started: Explain tides.', 'task 1/1 done']" in lines
    assert "RUNS [('explain', 'SUCCESS')]" in lines
    refused = [line for line in lines if line.startswith("REFUSED")]
    assert refused and "cannot serve 'unregistered' durably" in refused[0]


def test_a_cancelled_call_cancels_its_durable_run_and_the_server_serves_on(
    tmp_path: Path,
) -> None:
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
    assert "IN MODEL TURN True" in lines  # cancelled in the middle of a model turn
    assert "SLOW RUN CANCELLED" in lines, done.stdout  # recorded as cancelled
    assert "NEXT CALL False durable answer" in lines
