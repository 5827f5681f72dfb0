"""Time travel: a run's steps listed as a person reads them, and a finished run forked from a task
boundary, reusing what came before without a model request or a tool call, on SQLite and on a
real Postgres, each run in a process of its own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_review_suspend import start, wait_for_review

from agentensemble.durable import DurableClient
from agentensemble.errors import ConfigurationError
from agentensemble.tracing.trace import ExecutionTrace

APP = Path(__file__).with_name("_fork_app.py")


class App:
    """The fork app on one database, with its log of model requests and tool calls."""

    def __init__(self, db: str, workdir: Path) -> None:
        self.db, self.workdir = db, workdir
        self.log = workdir / "calls.log"

    def __call__(self, *args: str, **env: str) -> Any:
        result = self.process(*args, **env)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    def process(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(APP), self.db, str(self.workdir), *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **env},
        )

    def calls(self) -> list[str]:
        """What ran since the last look (then forgets it)."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        self.log.write_text("")
        return lines


def task(name: str, topic: str) -> list[str]:
    """What one task does: a model turn calling the tool, the tool, the final answer."""
    return [f"model {name}", f"tool {name}-{topic}", f"model {name}"]


@pytest.fixture(params=["sqlite", "postgres"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> App:
    if request.param == "sqlite":
        return App(f"sqlite:///{tmp_path}/runs.sqlite", tmp_path)
    return App(str(request.getfixturevalue("postgres_url")), tmp_path)


def test_a_run_is_listed_step_by_step_as_a_person_reads_it(app: App) -> None:
    app("run", "r1", "tides")
    steps = app("steps", "r1")
    assert [(s["task"], s["kind"], s["name"]) for s in steps] == [
        (1, "model", "Writer"),
        (1, "tool", "note"),
        (1, "model", "Writer"),
        (2, "model", "Writer"),
        (2, "tool", "note"),
        (2, "model", "Writer"),
    ]
    assert steps[0]["detail"] == 'note({"text": "one-tides"})'  # the call the model asked for
    assert steps[1]["detail"] == '{"text": "one-tides"}'  # the tool's arguments
    assert steps[1]["output"] == "noted one-tides\n\twith a tab"
    assert steps[2]["output"] == "one on tides: noted one-tides\n\twith a tab"
    assert all(s["timed"] for s in steps)  # each has its start time and duration


def test_a_fork_reuses_the_tasks_before_its_point_and_runs_the_rest_again(app: App) -> None:
    parent = app("run", "r1", "tides")
    assert app.calls() == [*task("one", "tides"), *task("two", "tides")]
    forked = app("fork", "r1", "2", "r1-again")
    assert app.calls() == task("two", "tides")  # task one: no model request, no tool call
    assert forked["tasks"] == parent["tasks"]
    assert (forked["forked_from"], forked["fork_point"]) == ("r1", 2)

    with_inputs = app("fork", "r1", "1", "r1-waves", "waves")  # everything again, other inputs
    assert app.calls() == [*task("one", "waves"), *task("two", "waves")]
    assert with_inputs["tasks"][1].startswith("two on waves")
    waves_again = app("fork", "r1-waves", "2", "r1-waves-again")  # its new inputs carried on
    assert app.calls() == task("two", "waves")
    assert waves_again["tasks"][1].startswith("two on waves")

    again = app("fork", "r1-again", "2", "r1-again-again")  # a fork of a fork
    assert app.calls() == task("two", "tides")
    assert (again["forked_from"], again["fork_point"]) == ("r1-again", 2)
    assert [s["output"] for s in app("steps", "r1")][-1] == parent["tasks"][1]  # untouched


def test_a_durable_run_has_one_id_the_one_its_caller_chose(tmp_path: Path) -> None:
    """The output (and its events, logs and trace) carry the durable run's id, not a UUID of
    their own: the same after a fork, whose id is the fork's."""
    app = App(f"sqlite:///{tmp_path}/runs.sqlite", tmp_path)
    assert app("run", "r1", "tides")["run_id"] == "r1"
    assert app("fork", "r1", "2", "r1-again")["run_id"] == "r1-again"
    client = DurableClient(app.db)
    try:
        assert client.result("r1", timeout=0).run_id == "r1"
        assert client.trace("r1").run_id == "r1"
    finally:
        client.close()


def test_a_fork_hands_an_edited_output_downstream_and_keeps_it_across_a_kill(app: App) -> None:
    parent = app("run", "r1", "tides")
    app.calls()
    edit = "EDITED by a person: spring tides"
    crashed = app.process("fork", "r1", "2", "r1-edited", FORK_EDIT=edit, KILL_AT_FINAL="two")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    # task one replayed without a request; task two's first turn and tool ran, then the kill
    assert app.calls() == task("two", "tides")

    resumed = app("result", "r1-edited")  # a worker resumes the fork after the kill
    assert app.calls() == ["model two"]  # only the request the kill hit came again
    assert resumed["tasks"][0] == edit  # handed on instead of task one's recorded output
    assert resumed["tasks"][1].endswith("(read EDITED)")  # task two was given the edit
    assert app("steps", "r1")[2]["output"] == parent["tasks"][0]  # the parent is untouched
    assert app("steps", "r1-edited")[2]["output"] == parent["tasks"][0]  # steps reused as they were

    again = app("fork", "r1-edited", "2", "r1-edited-again")  # a fork of it keeps the edit
    assert app.calls() == task("two", "tides")
    assert again["tasks"][0] == edit and again["tasks"][1].endswith("(read EDITED)")


def test_only_a_finished_run_is_forked_and_the_mistakes_are_named(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    App(db, tmp_path)("run", "done", "tides")
    waiting = start(db, "start", "waiting")
    client = DurableClient(db)
    try:
        wait_for_review(client, "waiting")
        with pytest.raises(ConfigurationError, match="'waiting' is PENDING: fork a finished"):
            client.fork("waiting", from_task=1)
        with pytest.raises(ConfigurationError, match="no durable run 'nope'"):
            client.fork("nope", from_task=1)
        with pytest.raises(ConfigurationError, match="counts tasks from 1"):
            client.fork("done", from_task=0)
        before = [run.run_id for run in client.list_runs()]
        for beyond in (3, 9):  # the run has two tasks: a fork from beyond them runs nothing
            with pytest.raises(
                ConfigurationError,
                match=f"'done' has 2 tasks: fork from task 1 to 2 \\(from_task={beyond}",
            ):
                client.fork("done", from_task=beyond, new_run_id=f"beyond-{beyond}")
        assert [run.run_id for run in client.list_runs()] == before  # nothing was written
        with pytest.raises(ConfigurationError, match="from task 1 has none"):
            client.fork("done", from_task=1, edited_output="x")
        with pytest.raises(ConfigurationError, match="at most 1000000 are kept"):
            client.fork("done", from_task=2, edited_output="x" * 1_000_001)
        with pytest.raises(ConfigurationError, match=r"new input 'when' \(object\) cannot be kept"):
            client.fork("done", from_task=1, inputs={"topic": "x", "when": object()})
        with pytest.raises(ConfigurationError, match="'waiting' is already taken"):
            client.fork("done", from_task=1, new_run_id="waiting")
        with pytest.raises(KeyError, match="no durable run"):
            client.steps("nope")
    finally:
        client.close()
        waiting.kill()
        waiting.wait(timeout=30)


def test_steps_and_fork_from_the_command_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    App(db, tmp_path)("run", "r1", "tides")

    def durable(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentensemble", "durable", *args, "--database", db],
            capture_output=True,
            text=True,
            timeout=90,
        )

    listed = durable("steps", "r1")
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.strip().splitlines()
    assert len(rows) == 6  # a newline or tab in an output never makes a fake row
    fields = rows[1].split("\t")
    assert fields[2:] == ["task 1", "tool", "note", '{"text": "one-tides"}',
                          "noted one-tides\\n\\twith a tab"]  # fmt: skip
    forked = durable("fork", "r1", "--from-task", "2", "--new-run-id", "r1-b", "--input", "x=y")
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout.strip() == "forked r1 from task 2 as r1-b (queued for a worker)"
    client = DurableClient(db)
    try:
        assert client.inputs("r1-b") == {"topic": "tides", "x": "y"}
        assert client.inputs("r1") == {"topic": "tides"}
        assert client.status("r1-b") == "ENQUEUED"
    finally:
        client.close()
    edited = durable("fork", "r1", "--from-task", "2", "--new-run-id", "r1-c", "--edit-output",
                     "EDITED on the command line")  # fmt: skip
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout.strip() == (
        "forked r1 from task 2 as r1-c, task 1's output edited (queued for a worker)"
    )
    worked = App(db, tmp_path)("result", "r1-c")  # a worker takes the queued fork
    assert worked["tasks"][0] == "EDITED on the command line"
    assert worked["tasks"][1].endswith("(read EDITED)")
    bad = durable("fork", "r1", "--from-task", "2", "--input", "novalue")
    assert bad.returncode == 2 and "'novalue' is not NAME=VALUE" in bad.stderr


def test_a_finished_run_is_replayed_as_its_trace_without_running(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    app = App(db, tmp_path)
    app("run", "r1", "tides")
    app.calls()
    saved = tmp_path / "r1.trace.json"
    replay = subprocess.run(
        [sys.executable, "-m", "agentensemble", "durable", "trace", "r1", "--out", str(saved),
         "--database", db],
        capture_output=True,
        text=True,
        timeout=90,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    trace = ExecutionTrace.from_json(saved.read_text())
    assert [t.task_name for t in trace.tasks] == ["one", "two"]
    assert app.calls() == []  # nothing ran again
    client = DurableClient(db)
    try:
        with pytest.raises(ConfigurationError, match="no durable run 'nope'"):
            client.trace("nope")
    finally:
        client.close()
