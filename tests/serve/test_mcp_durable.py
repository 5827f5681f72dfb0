"""mcp_server(..., durable=runtime): a served call is a durable run of the runtime (recorded in
its database like any durable run), with the same progress and result."""

from __future__ import annotations

from pathlib import Path

from _durable_app_common import run_app

APP = "_durable_served.py"


def test_a_served_call_is_a_durable_run(tmp_path: Path) -> None:
    lines = run_app(APP, str(tmp_path))
    assert "RESULT False durable answer" in lines
    assert "PROGRESS ['task 1/1 started: Explain tides.', 'task 1/1 done']" in lines
    assert "RUNS [('explain', 'SUCCESS')]" in lines
    refused = [line for line in lines if line.startswith("REFUSED")]
    assert refused and "cannot serve 'unregistered' durably" in refused[0]


def test_a_cancelled_call_cancels_its_durable_run_and_the_server_serves_on(
    tmp_path: Path,
) -> None:
    lines = run_app(APP, str(tmp_path), "cancel", timeout=180)
    assert "IN MODEL TURN True" in lines  # cancelled in the middle of a model turn
    assert "SLOW RUN CANCELLED" in lines, lines  # recorded as cancelled
    assert "NEXT CALL False durable answer" in lines
