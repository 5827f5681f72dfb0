"""``agentensemble serve-ag-ui`` as a subprocess: a crew file whose last task is reviewed by
the front end (``review: {handler: ag-ui}``), its model the local OpenAI-compatible server; with
``--durable``, runs recorded in the database and resumed after a crash of the command."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from ag_ui_helpers import post, resume, run_input, user
from serve_helpers import AGENTENSEMBLE, KEY, crew_file, model_env, serving, serving_process

from agentensemble.testing import OpenAICompatibleServer
from agentensemble_review import Continue, ReviewServer

pytestmark = pytest.mark.e2e

REVIEWED = """\
model: openai/test-model
review:
  policy: after_last_task
  handler: ag-ui
agents:
  writer:
    role: Writer
    goal: Explain {topic} plainly
tasks:
  write:
    description: Write about {topic}.
    expected_output: A paragraph.
    agent: writer
"""


@pytest.fixture
def model_server() -> Any:
    with OpenAICompatibleServer() as server:
        yield server


def test_a_crew_file_streams_and_its_review_is_answered_by_the_front_end(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    model_server.push_text("Tides follow the moon.")
    crew = crew_file(tmp_path, REVIEWED, "tides.yaml")
    with serving(["serve-ag-ui", str(crew)], model_env(model_server.base_url)) as base:
        first = post(f"{base}/", run_input(messages=[user("tides")]))
        [interrupt] = first.interrupts
        second = resume(f"{base}/", interrupt, {"approved": True})
    assert first.text == "Tides follow the moon."  # streamed from the model server
    assert interrupt.reason == "task_review" and "Tides follow the moon." in interrupt.message
    assert second.last.result == "Tides follow the moon."
    assert "Write about tides." in str(model_server.requests[0]["messages"])
    every = str([event.model_dump() for event in first.events + second.events])
    assert KEY not in every and "test-model" not in every


def test_a_bad_crew_file_stops_the_command_with_exit_code_2(tmp_path: Path) -> None:
    broken = crew_file(tmp_path, "tasks: [", "broken.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "agentensemble", "serve-ag-ui", str(broken), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "broken.yaml" in done.stderr


PLAIN = REVIEWED.replace("review:\n  policy: after_last_task\n  handler: ag-ui\n", "")


def test_durable_serving_records_each_run_in_the_database(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    """``--durable FILE``: an AG-UI run is a durable run, listed by ``agentensemble durable
    runs`` on the same file once the command has stopped."""
    model_server.push_text("Tides follow the moon.")
    crew = crew_file(tmp_path, PLAIN, "tides.yaml")
    database = tmp_path / "runs.sqlite"
    command = ["serve-ag-ui", str(crew), "--durable", str(database)]
    with serving(command, model_env(model_server.base_url)) as base:
        answer = post(f"{base}/", run_input(messages=[user("tides")]))
    assert answer.last.result == "Tides follow the moon."
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentensemble",
            "durable",
            "runs",
            "--database",
            f"sqlite:///{database}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    [row] = listed.stdout.strip().splitlines()  # run id, ensemble, status, created
    assert row.split("\t")[1:3] == ["tides", "SUCCESS"]


def test_durable_serving_refuses_a_front_end_reviewer(tmp_path: Path) -> None:
    """A durable run's reviews wait in the database, where no AG-UI interrupt can reach them."""
    crew = crew_file(tmp_path, REVIEWED, "tides.yaml")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentensemble",
            "serve-ag-ui",
            str(crew),
            "--port",
            "0",
            "--durable",
            str(tmp_path / "runs.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=model_env("http://127.0.0.1:9"),
    )
    assert done.returncode == 2
    assert "review: ag-ui cannot answer a durable run's reviews" in done.stderr


def test_a_durable_run_a_crash_interrupted_finishes_after_the_next_start(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    """``--durable FILE``: the command is killed (SIGKILL) while a run waits for its webhook
    review; the next start on the same file resumes the run by itself, asks the webhook about
    the same review, and finishes it without asking the model again."""
    model_server.push_text("Tides follow the moon.")
    with ReviewServer(port=0) as reviews:
        review = "review:\n  policy: after_last_task\n  handler: webhook\n"
        review += f"  url: {reviews.reviews_url}\n"
        crew = crew_file(tmp_path, PLAIN + review, "tides.yaml")
        database = tmp_path / "runs.sqlite"
        command = ["serve-ag-ui", str(crew), "--durable", str(database)]
        env = model_env(model_server.base_url)
        with serving_process(command, env) as (base, process):

            def start() -> None:
                with contextlib.suppress(Exception):  # its stream breaks when it is killed
                    post(f"{base}/", run_input(messages=[user("tides")]))

            threading.Thread(target=start, daemon=True).start()
            pending = reviews.wait_for_pending(timeout=60)
            process.send_signal(signal.SIGKILL)  # a crash, with the run waiting for its review
            process.wait(60)
        reviews.decide(pending["id"], Continue())
        with serving_process(command, env):
            deadline = time.monotonic() + 60
            status = ""
            while status != "SUCCESS" and time.monotonic() < deadline:
                listed = subprocess.run(
                    [*AGENTENSEMBLE, "durable", "runs", "--database", f"sqlite:///{database}"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                rows = [line.split("\t") for line in listed.stdout.splitlines()]
                status = rows[0][2] if rows else ""
                time.sleep(0.2)
    assert status == "SUCCESS"
    assert len(model_server.requests) == 1  # the task's answer was kept, not asked again
