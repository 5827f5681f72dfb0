"""``agentensemble serve-api`` as a subprocess, driven over HTTP with ``httpx``; the crew's model is
the local OpenAI-compatible server, and its review goes to the run's caller (``review: api``);
with ``--durable``, a run waiting for its review outlives a crash of the command."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import AGENTENSEMBLE, CREW, KEY, crew_file, model_env, serving, serving_process

from agentensemble.testing import OpenAICompatibleServer

pytestmark = pytest.mark.e2e

WAIT = 60.0
TOKEN = "a-run-api-token-long-enough"
REVIEWED = CREW + "review:\n  policy: after_last_task\n  handler: api\n"


@pytest.fixture
def model_server() -> Any:
    with OpenAICompatibleServer() as server:
        yield server


def state(http: httpx.Client, run_id: str, *wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        view: dict[str, Any] = http.get(f"/runs/{run_id}").json()
        if view["state"] in wanted:
            return view
        time.sleep(0.05)
    raise AssertionError(f"never {wanted}: {view}")


def test_serve_api_runs_a_crew_file_and_its_caller_reviews_it(
    model_server: Any, tmp_path: Path
) -> None:
    model_server.push_text("Facts about tides.")
    model_server.push_text("Tides, explained.")
    env = model_env(model_server.base_url, AGENTENSEMBLE_SERVE_TOKEN=TOKEN)
    path = crew_file(tmp_path, REVIEWED)
    with (
        serving(["serve-api", str(path)], env) as base,
        httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=WAIT
        ) as http,
    ):
        assert httpx.get(f"{base}/openapi.json").status_code == 401
        answer = http.post("/runs", json={"ensemble": "writer", "inputs": {"topic": "tides"}})
        assert answer.status_code == 202, answer.text
        run_id = answer.json()["run_id"]
        state(http, run_id, "waiting_review")
        review = http.get(f"/runs/{run_id}/reviews").json()["reviews"][0]
        assert review["request"]["output"] == "Tides, explained."
        http.post(f"/reviews/{review['review_id']}", json={"decision": "approve"})
        view = state(http, run_id, "succeeded")
    assert view["outputs"]["raw"] == "Tides, explained."
    assert KEY not in json.dumps(view)
    assert "Research tides." in str(model_server.requests[0]["messages"])


def test_serve_api_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    done = subprocess.run(
        [*AGENTENSEMBLE, "serve-api", str(crew_file(tmp_path)), "--host", "192.0.2.1"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=model_env("http://127.0.0.1:9"),
    )
    assert done.returncode == 2
    assert "AGENTENSEMBLE_SERVE_TOKEN" in done.stderr


def test_serve_api_durable_runs_survive_a_crash_of_the_command(
    model_server: Any, tmp_path: Path
) -> None:
    """``--durable FILE``: the command is killed (SIGKILL) while a run waits for its caller's
    review; started again on the same file, it lists that review, takes the decision and
    finishes the run without asking the model again."""
    model_server.push_text("Facts about tides.")
    model_server.push_text("Tides, explained.")
    env = model_env(model_server.base_url, AGENTENSEMBLE_SERVE_TOKEN=TOKEN)
    path = crew_file(tmp_path, REVIEWED)
    command = ["serve-api", str(path), "--durable", str(tmp_path / "runs.sqlite")]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serving_process(command, env) as (base, process):
        with httpx.Client(base_url=base, headers=auth, timeout=WAIT) as http:
            answer = http.post("/runs", json={"ensemble": "writer", "inputs": {"topic": "tides"}})
            assert answer.status_code == 202, answer.text
            run_id = answer.json()["run_id"]
            before = state(http, run_id, "waiting_review")["pending_reviews"]
        process.send_signal(signal.SIGKILL)  # a crash: nothing is stopped cleanly
        process.wait(WAIT)
    with (
        serving_process(command, env) as (base, _),
        httpx.Client(base_url=base, headers=auth, timeout=WAIT) as http,
    ):
        reviews = http.get(f"/runs/{run_id}/reviews").json()["reviews"]
        assert [r["review_id"] for r in reviews] == before
        assert reviews[0]["request"]["output"] == "Tides, explained."
        decided = http.post(
            f"/reviews/{before[0]}", json={"decision": "edit", "revised_output": "Tides, edited."}
        )
        assert decided.status_code == 200, decided.text
        view = state(http, run_id, "succeeded")
    assert view["outputs"]["raw"] == "Tides, edited."
    assert [d["decided_by"] for d in view["decisions"]] == ["token"]
    assert len(model_server.requests) == 2  # the finished task was not run again
    database = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    traced = subprocess.run(
        [*AGENTENSEMBLE, "durable", "trace", run_id, "--database", database],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert traced.returncode == 0, traced.stderr
    trace = json.loads(traced.stdout)
    [review] = [r for task in trace["tasks"] for r in task["reviews"]]
    assert (review["decision"], review["decided_by"]) == ("edit", "token")  # the API's caller


@pytest.mark.parametrize(
    ("database", "shown", "hidden"),
    [
        ("postgresql://app:pw-s3cret-value@127.0.0.1:9/runs", "app:***@127.0.0.1:9", "s3cret"),
        ("writer.yaml", "looks like the crew file, not a database", None),
        (":memory:", "in-memory SQLite database", None),
        ("mysql://app:pw-s3cret-value@db/runs", "is not supported", "s3cret"),
    ],
)
def test_serve_api_refuses_a_durable_database_it_cannot_use_masked(
    tmp_path: Path, database: str, shown: str, hidden: str | None
) -> None:
    path = crew_file(tmp_path)
    done = subprocess.run(
        [*AGENTENSEMBLE, "serve-api", str(path), "--port", "0", "--durable", database],
        capture_output=True,
        text=True,
        timeout=WAIT,
        cwd=tmp_path,
        env=model_env("http://127.0.0.1:9"),
    )
    assert done.returncode == 2, done.stderr
    assert shown in done.stderr
    assert "Traceback" not in done.stderr
    if hidden is not None:
        assert hidden not in done.stderr + done.stdout
