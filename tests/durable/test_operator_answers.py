"""Clear answers for an operator: a bad or unreachable database is one line (credentials masked,
no file created), a reused run id with other work is refused, a decision that waits for a worker
says so, and the durable commands are part of the one ``agentensemble`` command."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_review_suspend import finished, start, wait_for_review

from agentensemble.durable import DurableClient, ReviewClosedError, database_url
from agentensemble.durable._database import mask_url
from agentensemble.errors import ConfigurationError


def durable(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``agentensemble durable ARGS`` in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "agentensemble", "durable", *args],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:///", "names no file"),
        ("sqlite://", "names no file"),
        ("sqlite:///:memory:", "in-memory SQLite database"),
        ("sqlite:///file:x?mode=memory&uri=true", "in-memory SQLite database"),
        ("mysql://app:hunter2@db/runs", "scheme 'mysql'"),
        ("runs.sqlite", "no scheme"),
    ],
)
def test_a_url_that_cannot_hold_durable_runs_is_named(url: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        database_url(url)
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://app:pw@db:5432/runs", "postgresql://app:***@db:5432/runs"),
        ("postgresql://app@db/runs", "postgresql://app@db/runs"),
        ("postgresql://db/runs?password=pw&sslmode=require", "postgresql://db/runs?password=***&sslmode=require"),
        ("sqlite:///runs.sqlite", "sqlite:///runs.sqlite"),
        ("mysql://u:p@h/d", "mysql://u:***@h/d"),
    ],
)  # fmt: skip
def test_a_url_is_shown_with_its_scheme_and_without_its_credentials(url: str, shown: str) -> None:
    assert mask_url(url) == shown


@pytest.mark.parametrize(
    ("database", "message"),
    [
        ("sqlite:///never-created.sqlite", "no durable database at 'never-created.sqlite'"),
        ("sqlite:///missing/folder/runs.sqlite", "folder of the SQLite database"),
        ("sqlite:///", "names no file"),
        ("sqlite:///:memory:", "in-memory"),
        ("postgresql://app:hunter2@127.0.0.1:1/runs", "cannot reach the Postgres database"),
    ],
)
@pytest.mark.parametrize(
    "command", [["runs"], ["reviews", "r1"], ["decide", "r1", "x", "continue"]]
)
def test_read_only_commands_answer_in_one_line_and_create_nothing(
    tmp_path: Path, command: list[str], database: str, message: str
) -> None:
    result = durable(*command, "--database", database, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr  # never a traceback
    assert "hunter2" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # a mistyped path creates no file


def test_a_database_no_worker_has_prepared_is_one_line(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "empty.sqlite").close()  # a file, but no DBOS tables in it
    result = durable("runs", "--database", f"sqlite:///{tmp_path}/empty.sqlite")
    assert result.returncode == 2
    assert "holds no durable runs yet" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_client_prepares_a_new_database_so_runs_queue_before_any_worker(
    tmp_path: Path,
) -> None:
    client = DurableClient(f"sqlite:///{tmp_path}/runs.sqlite")
    try:
        run_id = client.submit("research", {"topic": "AI"}, run_id="research-1")
        assert [(r.run_id, r.ensemble, r.status) for r in client.list_runs()] == [
            (run_id, "research", "ENQUEUED")
        ]
    finally:
        client.close()


def test_a_run_id_reused_for_other_work_is_refused(any_database: str) -> None:
    client = DurableClient(any_database)
    try:
        client.submit("research", {"topic": "AI", "depth": 2}, run_id="weekly-1")
        # the same run again: idempotent, as before
        assert client.submit("research", {"depth": 2, "topic": "AI"}, run_id="weekly-1") == (
            "weekly-1"
        )
        with pytest.raises(ConfigurationError, match=r"weekly-1.*inputs differ in 'topic'"):
            client.submit("research", {"topic": "secret plan", "depth": 2}, run_id="weekly-1")
        with pytest.raises(ConfigurationError, match="ran ensemble 'research', not 'summary'"):
            client.submit("summary", {"topic": "AI", "depth": 2}, run_id="weekly-1")
    finally:
        client.close()


def test_a_reused_run_id_never_shows_input_values(tmp_path: Path) -> None:
    client = DurableClient(f"sqlite:///{tmp_path}/runs.sqlite")
    try:
        client.submit("research", {"api_key": "sk-first-value"}, run_id="r")
        with pytest.raises(ConfigurationError) as caught:
            client.submit("research", {"api_key": "sk-second-value"}, run_id="r")
    finally:
        client.close()
    assert "'api_key'" in str(caught.value)
    assert "sk-first" not in str(caught.value) and "sk-second" not in str(caught.value)


def test_a_decision_with_no_worker_is_queued_and_a_second_one_is_refused(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    first = start(db, "start", "announce-q")
    client = DurableClient(db)
    try:
        review = wait_for_review(client, "announce-q")
        first.kill()  # nobody holds the run now
        first.wait(timeout=30)
        queued = durable(
            "decide", "announce-q", review["review_id"], "edit", "--text", "Draft: Tuesday",
            "--decided-by", "operator-ann", "--database", db,
        )  # fmt: skip
        assert queued.returncode == 0, queued.stderr
        assert queued.stdout.startswith(f"queued {review['review_id']}: edit")
        with pytest.raises(ReviewClosedError, match="already has a decision queued"):
            client.decide("announce-q", review["review_id"], "continue", confirm_within=0.2)
        resumed = finished(start(db, "resume", "announce-q"))
    finally:
        client.close()
    assert resumed["tasks"][0] == "Draft: Tuesday"  # the first decision sent is the one applied
    traced = durable("trace", "announce-q", "--database", db)
    assert traced.returncode == 0, traced.stderr
    [decided] = [r for task in json.loads(traced.stdout)["tasks"] for r in task["reviews"]]
    assert (decided["decision"], decided["decided_by"]) == ("edit", "operator-ann")


def test_the_durable_commands_are_part_of_the_one_command_line() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "agentensemble", "--help"], capture_output=True, text=True
    )
    assert "durable" in listed.stdout
    helped = durable("--help")
    assert helped.returncode == 0
    for command in ("worker", "recover", "runs", "reviews", "decide"):
        assert command in helped.stdout
    module = subprocess.run(  # the same commands through the package's own entry point
        [sys.executable, "-m", "agentensemble", "durable", "--help"], capture_output=True, text=True
    )
    assert module.returncode == 0 and "decide" in module.stdout


def test_the_command_line_names_the_same_settings_as_the_package() -> None:
    from agentensemble.cli import durable_command
    from agentensemble.durable import _liveness, _runtime

    assert durable_command.DATABASE_ENV == _runtime.DATABASE_ENV
    assert durable_command.WORKER_ENV == _runtime.WORKER_ENV
    assert durable_command.HEARTBEAT_ENV == _liveness.HEARTBEAT_ENV
    assert durable_command.DEAD_AFTER_ENV == _liveness.DEAD_AFTER_ENV


def test_the_environment_variable_is_checked_like_an_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENTENSEMBLE_DATABASE_URL", "postgres://u:pw@h/db")
    assert database_url() == "postgres://u:pw@h/db"
    monkeypatch.setenv("AGENTENSEMBLE_DATABASE_URL", "sqlite:///:memory:")
    with pytest.raises(ConfigurationError, match="in-memory"):
        database_url()
    assert os.environ["AGENTENSEMBLE_DATABASE_URL"] == "sqlite:///:memory:"


RUNTIME_REUSE = """
import logging, sys
from agentensemble import Ensemble, Task
from agentensemble.durable import DurableClient, DurableRuntime
from agentensemble.errors import ConfigurationError

logging.basicConfig(level=logging.WARNING)  # any warning of ours or DBOS's shows on stderr

runtime = DurableRuntime(sys.argv[1])
runtime.register("echo", lambda: Ensemble(tasks=[Task(description="Echo {x}",
                                                      handler=lambda ctx: ctx.inputs["x"])]))
runtime.launch()
print(runtime.run("echo", {"x": "first"}, run_id="echo-1").raw)
print(runtime.run("echo", {"x": "first"}, run_id="echo-1").raw)  # the same run: its result
client = DurableClient(sys.argv[1])
client.submit("echo", {"x": "queued"}, run_id="echo-2")
client.close()
print(runtime.run("echo", {"x": "queued"}, run_id="echo-2").raw)  # waits for the queued run
for submit in (runtime.run, runtime.submit):
    try:
        submit("echo", {"x": "second"}, run_id="echo-1")
    except ConfigurationError as error:
        print("refused:", error)
runtime.shutdown()
"""


def test_a_runtime_refuses_a_run_id_reused_for_other_inputs_and_resumes_quietly(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", RUNTIME_REUSE, f"sqlite:///{tmp_path}/runs.sqlite"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[:3] == ["first", "first", "queued"]
    assert [line.startswith("refused: run id 'echo-1' is already taken") for line in lines[3:]] == [
        True,
        True,
    ]
    assert "inputs differ in 'x'" in lines[3]
    assert result.stderr == ""  # no DBOS warning about the queue on a resume by id


def test_the_runs_listing_shows_hostile_run_ids_and_names_as_one_escaped_row(
    tmp_path: Path,
) -> None:
    """A run id and an ensemble name are whatever a submitter chose (the database is shared):
    a newline, a tab or a terminal escape in them never prints a fake row or drives the
    terminal of the operator running ``durable runs``."""
    db = f"sqlite:///{tmp_path}/runs.sqlite"
    client = DurableClient(db)
    try:
        client.submit("research\x1b[2J", {}, run_id="evil\nfake-1\tresearch\tSUCCESS\t2026")
    finally:
        client.close()
    result = durable("runs", "--database", db)
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()
    assert len(rows) == 1 and rows[0].count("\t") == 3, result.stdout
    assert "\x1b" not in result.stdout and "evil\\nfake-1\\tresearch" in rows[0]
