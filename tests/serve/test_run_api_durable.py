"""run_api(..., durable=runtime): runs are durable runs that outlive the API process. The API
runs in a process of its own on SQLite; it is killed with a run waiting for a review and a run
finished, started again on the same database, and both runs are read (and the review decided)
through the new process, by their submitter only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from _durable_app_common import ROOT

APP = Path(__file__).with_name("_durable_run_api.py")
ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"
WAIT = 60.0


@contextmanager
def api_process(folder: Path) -> Iterator[str]:
    """The durable run API in a fresh interpreter; its base URL. Killed (SIGKILL: a crash) on
    exit."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    process = subprocess.Popen(
        [sys.executable, str(APP), str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # bounded: the process exits (EOF) if it fails
        assert line.startswith("PORT "), (line, process.stderr.read() if process.stderr else "")
        yield f"http://127.0.0.1:{line.split()[1]}"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)


def wait_for(http: httpx.Client, run_id: str, *states: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    view: dict[str, Any] = {}
    while time.monotonic() < deadline:
        view = http.get(f"/runs/{run_id}").json()
        if view.get("state") in states:
            return view
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached {states}: {view}")


def as_caller(base: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT)


def test_runs_and_their_reviews_survive_a_restart_of_the_api(tmp_path: Path) -> None:
    inputs = {"topic": "tides"}
    with api_process(tmp_path) as base, as_caller(base, ALICE) as alice:
        finished = alice.post("/runs", json={"ensemble": "plain", "inputs": inputs}).json()
        waiting = alice.post("/runs", json={"ensemble": "reviewed", "inputs": inputs}).json()
        assert wait_for(alice, finished["run_id"], "succeeded")["outputs"]["raw"] == (
            "durable answer"
        )
        wait_for(alice, waiting["run_id"], "waiting_review")
        before = alice.get(f"/runs/{waiting['run_id']}/reviews").json()["reviews"]
        assert [r["request"]["output"] for r in before] == ["durable draft"]
    # the first process was killed: a second one on the same database takes over
    with (
        api_process(tmp_path) as base,
        as_caller(base, ALICE) as alice,
        as_caller(base, BOB) as bob,
    ):
        done = wait_for(alice, finished["run_id"], "succeeded")
        assert done["outputs"]["raw"] == "durable answer"
        assert bob.get(f"/runs/{finished['run_id']}").status_code == 404
        wait_for(alice, waiting["run_id"], "waiting_review")
        reviews = alice.get(f"/runs/{waiting['run_id']}/reviews").json()["reviews"]
        assert [r["review_id"] for r in reviews] == [r["review_id"] for r in before]
        url = f"/reviews/{reviews[0]['review_id']}"
        assert bob.post(url, json={"decision": "approve"}).status_code == 404
        assert alice.post(url, json={"decision": "maybe"}).status_code == 400
        decided = alice.post(url, json={"decision": "edit", "revised_output": "edited after"})
        assert decided.status_code == 200, decided.text
        view = wait_for(alice, waiting["run_id"], "succeeded")
        assert view["outputs"]["raw"] == "edited after"
        assert [d["decided_by"] for d in view["decisions"]] == ["alice"]
        stream = alice.get(f"/runs/{waiting['run_id']}/events")
        assert stream.status_code == 200 and '"state": "succeeded"' in stream.text
