"""a2a_app(..., durable=runtime): every A2A task is a durable run of the runtime (recorded in
its database like any durable run), with the same task states and answer."""

from __future__ import annotations

from pathlib import Path

from _durable_app_common import run_app

APP = "_durable_a2a.py"


def test_an_a2a_task_is_a_durable_run(tmp_path: Path) -> None:
    lines = run_app(APP, str(tmp_path))
    assert "STATE TASK_STATE_COMPLETED" in lines, lines
    assert "ANSWER durable a2a answer" in lines
    assert "RUNS [('explainer', 'SUCCESS')]" in lines
    refused = [line for line in lines if line.startswith("REFUSED")]
    assert refused and "cannot serve 'unregistered' durably" in refused[0]


def test_cancel_task_cancels_the_durable_run(tmp_path: Path) -> None:
    lines = run_app(APP, str(tmp_path), "cancel", timeout=180)
    assert "IN MODEL TURN True" in lines, lines
    assert "TASK TASK_STATE_CANCELED" in lines
    assert "SLOW RUN CANCELLED" in lines, lines
