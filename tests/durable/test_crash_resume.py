"""Crash and resume: a run killed with SIGKILL resumes and finishes without paying twice.

The app runs in a real subprocess against the local OpenAI-compatible server; the server kills
it when a chosen request arrives. Restarted on the same database, the run resumes: no model
request that had been answered is sent again, no tool call that had completed runs again, and
the output equals an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentensemble.durable._runtime import CHECKPOINT_FORMAT
from agentensemble.testing import OpenAICompatibleServer
from agentensemble.testing.openai_server import TextReply, ToolCallsReply

APP = Path(__file__).with_name("_notes_app.py")
LOGICAL_REQUESTS = 4  # task one: tools, answer; task two: tool, answer


def reply_for(body: dict[str, Any]) -> TextReply | ToolCallsReply:
    """The model, as a function of the conversation (so a resent request gets the same answer)."""
    messages = body["messages"]
    prompt = str(messages[1]["content"])
    tool_results = sum(1 for m in messages if m["role"] == "tool")
    if "Task two" in prompt:  # task two's prompt quotes task one's output as context
        if tool_results == 0:
            return ToolCallsReply(calls=(("note", '{"text": "c"}'),))
        return TextReply("two done")
    if tool_results == 0:
        return ToolCallsReply(calls=(("note", '{"text": "a"}'), ("note", '{"text": "b"}')))
    return TextReply("one done")


def run_app(db: str, server: OpenAICompatibleServer, workdir: Path, run_id: str, **env: str) -> Any:
    return subprocess.run(
        [sys.executable, str(APP), db, server.base_url, str(workdir), run_id],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
    )


class KillOnArrival:
    """Answers like ``reply_for``; SIGKILLs the app when request number ``kill_at`` arrives."""

    def __init__(self, workdir: Path, kill_at: int | None) -> None:
        self.workdir, self.kill_at = workdir, kill_at
        self.arrived = 0
        self.answered: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> TextReply | ToolCallsReply:
        with self._lock:
            self.arrived += 1
            number = self.arrived
        if number == self.kill_at:
            os.kill(int((self.workdir / "pid").read_text()), signal.SIGKILL)
            return TextReply("never delivered: the client is dead", delay=1.0)
        reply = reply_for(body)
        with self._lock:
            self.answered.append(repr(reply))
        return reply


def uninterrupted(tmp_path: Path) -> dict[str, Any]:
    workdir = tmp_path / "baseline"
    workdir.mkdir()
    with OpenAICompatibleServer() as server:
        server.set_responder(KillOnArrival(workdir, kill_at=None))
        done = run_app(f"sqlite:///{workdir}/runs.sqlite", server, workdir, "baseline-run")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("kill_at", [2, 3, 4])
def test_a_killed_run_resumes_without_resending_answered_requests_or_rerunning_tools(
    tmp_path: Path, kill_at: int
) -> None:
    expected = uninterrupted(tmp_path)
    workdir = tmp_path / "crash"
    workdir.mkdir()
    db = f"sqlite:///{workdir}/runs.sqlite"
    with OpenAICompatibleServer() as server:
        model = KillOnArrival(workdir, kill_at=kill_at)
        server.set_responder(model)
        crashed = run_app(db, server, workdir, "run-1")
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        effects_before = (workdir / "effects.log").read_text().split()

        resumed = run_app(db, server, workdir, "run-1")

    assert resumed.returncode == 0, resumed.stderr
    output = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert output == expected
    # every logical request answered exactly once; only the one in flight at the kill came twice
    assert len(model.answered) == LOGICAL_REQUESTS
    assert model.arrived == LOGICAL_REQUESTS + 1
    # each tool call's side effect happened exactly once, across both processes
    effects = (workdir / "effects.log").read_text().split()
    assert sorted(effects) == ["a", "b", "c"]
    assert effects[: len(effects_before)] == effects_before


def test_a_run_recovered_by_changed_code_is_reported_not_mixed(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    with OpenAICompatibleServer() as server:
        model = KillOnArrival(tmp_path, kill_at=3)
        server.set_responder(model)
        crashed = run_app(db, server, tmp_path, "run-1")
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr

        changed = run_app(db, server, tmp_path, "run-1", WRITER_ROLE="Editor")

    assert changed.returncode != 0
    assert "diverged from its checkpoints" in changed.stderr
    assert "model:Editor" in changed.stderr
    assert model.arrived == 3  # nothing was sent for the changed code's first turn


def test_a_parallel_run_checkpoints_every_concurrent_call_as_its_own_step(tmp_path: Path) -> None:
    import sqlite3

    db = f"sqlite:///{tmp_path}/runs.sqlite"
    with OpenAICompatibleServer() as server:
        server.set_responder(KillOnArrival(tmp_path, kill_at=None))
        done = run_app(db, server, tmp_path, "parallel-1", NOTES_WORKFLOW="parallel")
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout.strip().splitlines()[-1])
    assert output["tasks"] == ["one done", "two done"]

    with sqlite3.connect(tmp_path / "runs.sqlite") as connection:
        steps = [
            name
            for (name,) in connection.execute(
                "SELECT function_name FROM operation_outputs WHERE workflow_uuid = 'parallel-1'"
            )
        ]
    # 4 model turns and 3 tool calls, each a step named after its task
    assert sorted(steps) == sorted(
        ["task1:model:Writer"] * 2
        + ["task1:tool:note"] * 2
        + ["task2:model:Writer"] * 2
        + ["task2:tool:note"]
    )


class SlowSecondTask(KillOnArrival):
    """Like KillOnArrival, but task two's first answer takes a second: the tasks interleave
    one way in the first process, and (answered at once) another way after the restart."""

    def __init__(self, workdir: Path, kill_at: int | None, *, slow: bool) -> None:
        super().__init__(workdir, kill_at)
        self.slow = slow
        self.arrivals: list[str] = []

    def __call__(self, body: dict[str, Any]) -> TextReply | ToolCallsReply:
        messages = body["messages"]
        task = "two" if "Task two" in str(messages[1]["content"]) else "one"
        turn = 2 if any(m["role"] == "tool" for m in messages) else 1
        self.arrivals.append(f"{task}:{turn}")
        reply = super().__call__(body)
        if self.slow and task == "two" and turn == 1:
            return replace(reply, delay=1.0)
        return reply


@pytest.mark.parametrize(
    ("kill_at", "in_flight_at_kill"),
    [(3, ["one:2", "two:1"]), (4, ["two:2"])],
)
def test_a_parallel_run_resumes_whatever_order_its_tasks_take_after_the_restart(
    tmp_path: Path, kill_at: int, in_flight_at_kill: list[str]
) -> None:
    """Each task numbers its steps in a range of its own, so a replay that interleaves the
    tasks another way finds every checkpoint (it used to stop with a divergence)."""
    import sqlite3

    baseline = tmp_path / "baseline"
    baseline.mkdir()
    with OpenAICompatibleServer() as server:
        server.set_responder(SlowSecondTask(baseline, None, slow=True))
        done = run_app(
            f"sqlite:///{baseline}/runs.sqlite", server, baseline, "p", NOTES_WORKFLOW="parallel"
        )
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout.strip().splitlines()[-1])

    db = f"sqlite:///{tmp_path}/runs.sqlite"
    with OpenAICompatibleServer() as server:
        first = SlowSecondTask(tmp_path, kill_at, slow=True)
        server.set_responder(first)
        crashed = run_app(db, server, tmp_path, "p", NOTES_WORKFLOW="parallel")
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        assert sorted(first.arrivals[:2]) == ["one:1", "two:1"]  # both tasks started at once

        second = SlowSecondTask(tmp_path, None, slow=False)
        server.set_responder(second)
        resumed = run_app(db, server, tmp_path, "p", NOTES_WORKFLOW="parallel")

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.strip().splitlines()[-1]) == expected
    # only the requests in flight at the kill were sent again (and what followed them)
    resent = [a for a in second.arrivals if a in first.arrivals]
    assert sorted(resent) == sorted(in_flight_at_kill)
    assert sorted(first.arrivals + second.arrivals) == sorted(
        ["one:1", "one:2", "two:1", "two:2", *in_flight_at_kill]
    )
    assert sorted((tmp_path / "effects.log").read_text().split()) == ["a", "b", "c"]

    with sqlite3.connect(tmp_path / "runs.sqlite") as connection:
        steps = connection.execute(
            "SELECT function_id, function_name FROM operation_outputs WHERE workflow_uuid = 'p'"
        ).fetchall()
    for function_id, name in steps:  # task i's steps are numbered from i * 2**20
        if name.startswith("task"):
            assert function_id >> 20 == int(name[4 : name.index(":")]), (function_id, name)


def test_a_run_started_with_another_checkpoint_format_is_named_at_launch(tmp_path: Path) -> None:
    """Runs carry the checkpoint format, not a hash of the code: an upgrade of DBOS or of this
    package keeps them resumable; one this code cannot resume is reported, not left silently."""
    import sqlite3

    db = f"sqlite:///{tmp_path}/runs.sqlite"
    with OpenAICompatibleServer() as server:
        server.set_responder(KillOnArrival(tmp_path, kill_at=2))
        crashed = run_app(db, server, tmp_path, "old-run")
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        with sqlite3.connect(tmp_path / "runs.sqlite") as connection:
            ((version,),) = connection.execute(
                "SELECT application_version FROM workflow_status WHERE workflow_uuid = 'old-run'"
            )
            assert version == CHECKPOINT_FORMAT
            connection.execute("UPDATE workflow_status SET application_version = 'format-0'")

        server.set_responder(KillOnArrival(tmp_path, kill_at=None))
        done = run_app(db, server, tmp_path, "new-run")

    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "durable runs left unresumed" in said
    assert "old-run (format-0)" in said


def test_a_durable_run_streams_its_events_and_model_text(tmp_path: Path) -> None:
    """``DurableRuntime.astream`` yields what ``Ensemble.astream`` yields, for a run that is
    checkpointed like any other: killed after its first answer, the resumed stream carries on
    and the output is the uninterrupted run's."""
    expected = uninterrupted(tmp_path)
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    with OpenAICompatibleServer() as server:
        server.set_responder(KillOnArrival(tmp_path, kill_at=3))
        crashed = run_app(db, server, tmp_path, "streamed", NOTES_STREAM="1")
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        resumed = run_app(db, server, tmp_path, "streamed", NOTES_STREAM="1")

    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stdout.strip().splitlines()
    assert json.loads(lines[-1]) == expected
    kinds = json.loads(next(line for line in lines if line.startswith("events "))[len("events ") :])
    assert kinds[0] == "EnsembleStarted" and kinds[-1] == "EnsembleCompleted"
    assert "ToolCallCompleted" in kinds

    def text_of(output: str) -> str:
        return "".join(
            json.loads(line[len("delta ") :])
            for line in output.splitlines()
            if line.startswith("delta ")
        )

    # task one's answer streamed before the kill; after the restart it is replayed (not sent
    # again, not streamed again) and only task two's answer streams
    assert text_of(crashed.stdout) == "one done"
    assert text_of(resumed.stdout) == "two done"


def test_the_sqlite_database_is_put_in_wal_mode(tmp_path: Path) -> None:
    """DBOS opens SQLite with a rollback journal (every step waits for the disk); WAL costs a
    quarter of that per turn, and the file keeps the mode for every process that opens it."""
    import sqlite3

    with OpenAICompatibleServer() as server:
        server.set_responder(KillOnArrival(tmp_path, kill_at=None))
        done = run_app(f"sqlite:///{tmp_path}/runs.sqlite", server, tmp_path, "wal-1")
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "runs.sqlite") as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
