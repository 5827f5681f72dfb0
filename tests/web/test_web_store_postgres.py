"""The console's history in Postgres (``--db postgresql://...``), against a real server (the
session's ``pgserver``): the same store as SQLite, so every test here runs on both."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from _web_support import api_client, logged_in
from test_web_history import _review, _run_events

from agentensemble_web import WebConsoleServer
from agentensemble_web.reviewers import add_reviewer, list_reviewers, revoke_reviewer
from agentensemble_web.store import Store, StoreUnavailableError

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgres"])
def console_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh console database: a SQLite file, then a real Postgres one."""
    if request.param == "sqlite":
        return str(tmp_path / "console.sqlite3")
    return str(request.getfixturevalue("postgres_url"))


def _summary(run_id: str, started: float, status: str = "completed") -> dict[str, object]:
    ended = None if status == "running" else started + 1
    return {"run_id": run_id, "started_at": started, "ended_at": ended, "status": status}


def test_runs_events_search_and_pages(console_db: str) -> None:
    store = Store(console_db)
    try:
        now = time.time()
        for i in range(5):
            store.save_run(_summary(f"r{i}", now + i), f"r{i} Writer report_{i}% done")
            store.add_event(f"r{i}", 1, {"type": "EnsembleStarted", "run_id": f"r{i}"})
            store.add_event(f"r{i}", 2, {"type": "Note", "text": "nul\x00 and ünïcode"})
        store.add_event("r0", 2, {"type": "Note", "text": "replaced"})  # the same seq again
        store.save_run(_summary("r0", now, "failed"), "r0 writer")  # updated in place
        store.commit()
        runs, total = store.runs(limit=2)
        assert total == 5 and [r["run_id"] for r in runs] == ["r4", "r3"]
        assert [r["run_id"] for r in store.runs(limit=2, offset=4)[0]] == ["r0"]
        assert store.runs(query="REPORT_3%")[1] == 1  # case-insensitive, wildcards as text
        assert store.runs(query="%")[1] == 4  # the four whose text holds a "%"
        assert store.runs(query="r%d")[1] == 0 and store.runs(query="r_ w")[1] == 0
        assert store.runs(status="failed")[0][0]["run_id"] == "r0"
        found = store.run("r0")
        assert found is not None
        summary, events = found
        assert summary["status"] == "failed"
        assert events == [
            {"type": "EnsembleStarted", "run_id": "r0"},
            {"type": "Note", "text": "replaced"},
        ]
        kept = store.run("r1")
        assert kept is not None and kept[1][1]["text"] == "nul\x00 and ünïcode"
        assert store.run("missing") is None
        assert store.runs()[0][0]["started_at"] == now + 4  # timestamps keep their precision
    finally:
        store.close()


def test_retention_keeps_the_newest_runs_and_drops_old_ones(console_db: str) -> None:
    store = Store(console_db, keep_runs=3, keep_days=1)
    now = time.time()
    for i, started in enumerate([now - 5 * 86_400, now - 4, now - 3, now - 2, now - 1]):
        store.save_run(_summary(f"r{i}", started), f"r{i}")
        store.add_event(f"r{i}", 1, {"type": "EnsembleStarted", "run_id": f"r{i}"})
    store.save_review(
        {
            "id": "old-review",
            "run_id": "r0",
            "created_at": now - 5 * 86_400,
            "status": "decided",
            "decision": {"decided_at": now - 5 * 86_400},
        }
    )
    store.prune()
    runs, total = store.runs()
    assert total == 3 and [r["run_id"] for r in runs] == ["r4", "r3", "r2"]
    assert store.run("r0") is None and store.run("r1") is None
    assert store.reviews() == []
    store.close()
    reopened = Store(console_db, keep_runs=3, keep_days=1)  # a restart keeps what was kept
    assert reopened.runs()[1] == 3
    reopened.close()


def test_reviews_sessions_and_reviewers(console_db: str) -> None:
    store = Store(console_db)
    now = time.time()
    for i, status in enumerate(["pending", "decided", "expired"]):
        store.save_review(
            {
                "id": f"v{i}",
                "run_id": "r",
                "created_at": now + i,
                "status": status,
                "deadline": now + 60,
                "decision": {"decided_at": now + 10 + i} if status == "decided" else None,
            }
        )
    store.save_review({"id": "v0", "run_id": "r", "created_at": now, "status": "pending", "x": 1})
    assert [v["id"] for v in store.reviews()] == ["v0", "v1", "v2"]
    assert store.reviews()[0]["x"] == 1
    assert [v["id"] for v in store.decisions()] == ["v2", "v1"]  # expired at its deadline
    store.save_session("sid", "key", "csrf", "alice", now)
    store.save_session("sid", "key2", "csrf2", "alice", now + 1)  # replaced
    stored = store.session("sid")
    assert stored is not None and stored[1:] == ("csrf2", "alice", now + 1)
    store.forget_sessions(now + 2)
    assert store.session("sid") is None
    store.close()

    token = add_reviewer(console_db, "alice")
    assert [r["name"] for r in list_reviewers(console_db)] == ["alice"]
    revoke_reviewer(console_db, "alice")
    again = add_reviewer(console_db, "alice")  # a revoked reviewer can be added back
    assert again != token and list_reviewers(console_db)[0]["revoked_at"] is None


def test_a_console_on_postgres_keeps_runs_reviews_and_reviewers_across_a_restart(
    postgres_url: str,
) -> None:
    token = add_reviewer(postgres_url, "bob")
    with WebConsoleServer(port=0, db=postgres_url) as console, api_client(console) as api:
        api.post("/api/events", json={"events": _run_events("run-pg", "Kept in Postgres")})
        api.post("/api/reviews", json=_review("r-pg", "run-pg"))
    with WebConsoleServer(port=0, db=postgres_url) as console:
        client, csrf = logged_in(console, token)
        try:
            assert client.get("/api/session").json()["principal"] == "bob"
            runs = client.get("/api/runs", params={"q": "postgres"}).json()
            assert [r["run_id"] for r in runs["runs"]] == ["run-pg"]
            events = client.get("/api/runs/run-pg").json()["events"]
            assert [e["type"] for e in events][:2] == ["EnsembleStarted", "TaskStarted"]
            decided = client.post(
                "/api/reviews/r-pg/decision",
                json={"decision": "continue"},
                headers={"X-CSRF-Token": csrf},
            )
            assert decided.status_code == 200
            audit = client.get("/api/audit").json()["decisions"]
            assert audit[0]["decision"]["decided_by"] == "bob"
        finally:
            client.close()


def test_an_unreachable_postgres_is_one_line_without_its_password(tmp_path: Path) -> None:
    url = "postgresql://console:s3cret-pass@127.0.0.1:1/history"
    with pytest.raises(StoreUnavailableError) as caught:
        Store(url)
    assert "s3cret-pass" not in str(caught.value)
    assert "cannot reach the console's database postgresql://console:" in str(caught.value)
    for command in (["serve", "--port", "0"], ["reviewers", "list"]):
        done = subprocess.run(
            [sys.executable, "-m", "agentensemble", *command, "--db", url],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert "cannot reach the console's database" in done.stderr
        assert "s3cret-pass" not in done.stderr + done.stdout
        assert "Traceback" not in done.stderr


def test_serve_on_postgres_prints_where_history_is_kept_without_the_password(
    postgres_url: str,
) -> None:
    url = postgres_url.replace("postgres:@", "postgres:pw-s3cret-9@", 1)
    assert "pw-s3cret-9" in url  # the local server trusts any password: this one is ignored
    env = dict(os.environ, PYTHONUNBUFFERED="1", AGENTENSEMBLE_WEB_TOKEN="tok-pg")
    process = subprocess.Popen(
        [sys.executable, "-m", "agentensemble", "serve", "--port", "0", "--db", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=env,
    )
    assert process.stdout is not None
    printed: list[str] = []
    try:
        while not any("history kept in:" in line for line in printed):
            line = process.stdout.readline()
            assert line, "serve ended before saying where the history is kept"
            printed.append(line)
        login = next(line for line in printed if "open in a browser:" in line)
        base = login.split("open in a browser:", 1)[1].strip().split("/login", 1)[0]
        with httpx.Client(timeout=10.0, headers={"Authorization": "Bearer tok-pg"}) as api:
            posted = api.post(f"{base}/api/events", json={"events": _run_events("run-cli")})
            assert posted.status_code == 200
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=20)
    assert "postgresql://postgres:***@" in printed[-1]
    assert "pw-s3cret-9" not in "".join(printed) + errors
    store = Store(postgres_url)  # what serve wrote is in Postgres
    try:
        assert [r["run_id"] for r in store.runs()[0]] == ["run-cli"]
    finally:
        store.close()


def test_a_store_whose_postgres_connection_broke_opens_a_new_one(postgres_url: str) -> None:
    """As when the database restarts: an administrator ends the console's connection."""
    import psycopg

    store = Store(postgres_url)
    try:
        store.save_run(_summary("before", time.time()), "before")
        store.commit()
        backend = store.connection.one("SELECT pg_backend_pid()")[0]
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        assert [r["run_id"] for r in store.runs()[0]] == ["before"]  # read on a new connection
        assert store.connection.one("SELECT pg_backend_pid()")[0] != backend
        store.save_run(_summary("after", time.time() + 1), "after")
        store.commit()
    finally:
        store.close()
    reopened = Store(postgres_url)
    try:
        assert [r["run_id"] for r in reopened.runs()[0]] == ["after", "before"]
    finally:
        reopened.close()
