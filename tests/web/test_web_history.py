"""History and names: runs, reviews and sessions survive a restart of the console (SQLite),
retention prunes, named reviewers are recorded on every decision, the runs page paginates and
searches, and the stream cap never locks a new viewer out."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from _web_support import api_client, logged_in

from agentensemble_web import WebConsoleServer, _hub
from agentensemble_web.reviewers import ReviewerError, add_reviewer, revoke_reviewer
from agentensemble_web.store import Store

REPO_ROOT = Path(__file__).resolve().parents[2]


def _run_events(run_id: str, description: str = "Greet alice", role: str = "Mailer") -> list:
    """A finished one-task run: its task, one model turn (tokens, cost), timed over 4.2 s."""
    t0 = time.time() - 60
    return [
        {"type": "EnsembleStarted", "run_id": run_id, "total_tasks": 1, "ts": t0},
        {
            "type": "TaskStarted",
            "run_id": run_id,
            "ts": t0,
            "task_index": 1,
            "total_tasks": 1,
            "task_description": description,
            "agent_role": role,
        },
        {
            "type": "LLMCallCompleted",
            "run_id": run_id,
            "ts": t0 + 4,
            "task_index": 1,
            "agent_role": role,
            "model": "gpt-4o-mini",
            "duration": 4.0,
            "usage": {"total_tokens": 812},
            "cost_usd": 0.00031,
            "response": {"content": "Done."},
        },
        {
            "type": "TaskCompleted",
            "run_id": run_id,
            "ts": t0 + 4.2,
            "task_index": 1,
            "total_tasks": 1,
            "output": {"raw": "Done."},
        },
        {
            "type": "EnsembleCompleted",
            "run_id": run_id,
            "ts": t0 + 4.2,
            "output": {"exit_reason": "completed"},
        },
    ]


def _review(review_id: str, run_id: str = "run-1") -> dict:
    return {
        "run_id": run_id,
        "request": {
            "id": review_id,
            "timing": "during_execution",
            "task_description": "greet",
            "output": '{"to": "alice"}',
            "tool_name": "send_email",
            "timeout_seconds": 60,
            "on_timeout": "exit_early",
        },
    }


def test_runs_reviews_and_sessions_survive_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "console.sqlite3"
    with WebConsoleServer(port=0, db=db) as console:
        port = console.port
        with api_client(console) as api:
            api.post("/api/events", json={"events": _run_events("run-1")})
            api.post("/api/reviews", json=_review("r-1"))
            api.post("/api/reviews", json=_review("r-2"))
        browser, csrf = logged_in(console)
        answer = browser.post(
            "/api/reviews/r-1/decision",
            json={"decision": "exit_early", "reason": "not today"},
            headers={"X-CSRF-Token": csrf},
        )
        assert answer.status_code == 200
    with WebConsoleServer(port=port, db=db) as console, closing(browser):
        # the page's session (cookie and key) is still good: an open page just reconnects
        runs = browser.get("/api/runs").json()
        assert runs["total"] == 1
        [run] = runs["runs"]
        assert (run["name"], run["agents"], run["status"]) == (
            "Greet alice",
            ["Mailer"],
            "completed",
        )
        events = browser.get("/api/runs/run-1").json()["events"]
        assert [e["type"] for e in events] == [e["type"] for e in _run_events("x")]
        assert (run["tokens"], run["cost_usd"], run["duration_seconds"]) == (812, 0.00031, 4.2)
        [decision] = browser.get("/api/audit").json()["decisions"]
        assert decision["id"] == "r-1"
        assert decision["decision"]["decided_by"] == "console"
        assert decision["decision"]["reason"] == "not today"
        # a review still pending can be decided after the restart, and its handler sees it
        answer = browser.post(
            "/api/reviews/r-2/decision",
            json={"decision": "continue"},
            headers={"X-CSRF-Token": csrf},
        )
        assert answer.status_code == 200
        with api_client(console) as api:
            assert api.get("/api/reviews/r-2").json()["decision"]["decision"] == "continue"


def test_retention_keeps_the_newest_runs_and_drops_old_ones(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite3", keep_runs=3, keep_days=1)
    now = time.time()
    for i, started in enumerate([now - 5 * 86_400, now - 4, now - 3, now - 2, now - 1]):
        summary = {
            "run_id": f"r{i}",
            "started_at": started,
            "ended_at": started + 1,
            "status": "completed",
        }
        store.save_run(summary, f"r{i}")
        store.add_event(f"r{i}", 1, {"type": "EnsembleStarted", "run_id": f"r{i}"})
    store.prune()
    runs, total = store.runs()
    assert total == 3 and [r["run_id"] for r in runs] == ["r4", "r3", "r2"]
    assert store.run("r0") is None and store.run("r1") is None
    store.close()


def test_the_runs_page_paginates_filters_and_searches(console: WebConsoleServer) -> None:
    with api_client(console) as api:
        events = []
        for i in range(120):
            events += _run_events(
                f"run-{i:03d}", f"Task number {i}", "Writer" if i % 2 else "Critic"
            )
        assert api.post("/api/events", json={"events": events}).json()["accepted"] == 600
        first = api.get("/api/runs", params={"limit": 50}).json()
        assert (len(first["runs"]), first["total"]) == (50, 120)
        assert first["runs"][0]["run_id"] == "run-119"  # newest first
        third = api.get("/api/runs", params={"limit": 50, "offset": 100}).json()
        assert len(third["runs"]) == 20 and third["runs"][-1]["run_id"] == "run-000"
        found = api.get("/api/runs", params={"q": "number 11"}).json()
        assert {r["run_id"] for r in found["runs"]} == {
            "run-011",
            *(f"run-{i}" for i in range(110, 120)),
        }
        critics = api.get("/api/runs", params={"q": "critic", "limit": 200}).json()
        assert critics["total"] == 60
        # LIKE's wildcards are searched as text
        assert api.get("/api/runs", params={"q": "%"}).json()["total"] == 0
        assert api.get("/api/runs", params={"status": "failed"}).json()["total"] == 0
        assert api.get("/api/runs", params={"limit": "x"}).status_code == 400


def test_a_named_reviewers_decisions_record_who_and_revoking_ends_their_access(
    tmp_path: Path,
) -> None:
    db = tmp_path / "console.sqlite3"
    token = add_reviewer(db, "alice")
    with pytest.raises(ReviewerError, match="already exists"):
        add_reviewer(db, "alice")
    with pytest.raises(ReviewerError, match="invalid reviewer name"):
        add_reviewer(db, "api")
    with WebConsoleServer(port=0, db=db) as console:
        assert "alice" not in console.login_url
        with api_client(console) as api:
            api.post("/api/reviews", json=_review("r-1"))
        alice, csrf = logged_in(console, token)
        with closing(alice):
            assert alice.get("/api/session").json()["principal"] == "alice"
            answer = alice.post(
                "/api/reviews/r-1/decision",
                json={"decision": "continue"},
                headers={"X-CSRF-Token": csrf},
            )
            assert answer.json()["decision"]["decided_by"] == "alice"
            [row] = alice.get("/api/audit").json()["decisions"]
            assert row["decision"]["decided_by"] == "alice"
            revoke_reviewer(db, "alice")
            assert alice.get("/api/runs").status_code == 401  # her open page is logged out
        with httpx.Client(base_url=console.url) as client:
            assert client.get(f"/login?token={token}").status_code == 401
    assert token not in (tmp_path / "console.sqlite3").read_bytes().decode("latin-1")


def test_adding_a_revoked_reviewer_again_does_not_bring_back_their_old_sessions(
    tmp_path: Path,
) -> None:
    """Alice's laptop is lost: she is revoked, then added again with a new token. The page
    still open on the lost laptop (its cookie and key) stays logged out, on every route and on
    the live stream; her new token logs in."""
    db = tmp_path / "console.sqlite3"
    old_token = add_reviewer(db, "alice")
    with WebConsoleServer(port=0, db=db) as console:
        lost, _ = logged_in(console, old_token)
        with closing(lost):
            assert lost.get("/api/runs").status_code == 200
            revoke_reviewer(db, "alice")
            new_token = add_reviewer(db, "alice")
            for path in ("/", "/static/app.js", "/api/session", "/api/runs", "/api/stream"):
                assert lost.get(path).status_code == 401, path
            assert lost.get(f"/login?token={old_token}").status_code == 401
        again, _ = logged_in(console, new_token)
        with closing(again):
            assert again.get("/api/session").json()["principal"] == "alice"


def test_a_database_in_a_missing_folder_is_refused_and_no_folder_is_made(tmp_path: Path) -> None:
    from agentensemble_web.store import StoreUnavailableError

    with pytest.raises(StoreUnavailableError, match="does not exist"):
        WebConsoleServer(port=0, db=tmp_path / "typo" / "console.sqlite3").start()
    assert not (tmp_path / "typo").exists()


def test_the_reviewers_command_adds_lists_and_revokes(tmp_path: Path) -> None:
    db = str(tmp_path / "console.sqlite3")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentensemble", "reviewers", *args, "--db", db],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO_ROOT,
        )

    added = cli("add", "bob")
    assert added.returncode == 0, added.stderr
    token = added.stdout.split("(shown once):", 1)[1].split()[0]
    assert len(token) >= 24
    listed = cli("list")
    assert "bob" in listed.stdout and "active" in listed.stdout and token not in listed.stdout
    assert cli("revoke", "bob").returncode == 0
    assert "revoked" in cli("list").stdout
    bad = cli("add", "not a name")
    assert bad.returncode == 2 and "invalid reviewer name" in bad.stderr
    assert cli("revoke", "nobody").returncode == 2


def test_the_stream_cap_evicts_the_oldest_and_never_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_hub, "MAX_SUBSCRIBERS", 3)

    async def scenario() -> None:
        hub = _hub.Hub()
        tabs = [hub.subscribe("one-session") for _ in range(_hub.MAX_PER_SESSION)]
        assert len(hub) == 3 and all(t.closed for t in tabs[:-3])  # the session's oldest went
        newcomer = hub.subscribe("another-session")
        assert newcomer is not None and not newcomer.closed and len(hub) == 3
        assert sum(1 for t in tabs if not t.closed) == 2

    asyncio.run(scenario())


def test_one_session_cannot_hold_more_than_its_share_of_streams(console: WebConsoleServer) -> None:
    browser, _ = logged_in(console)
    ended: list[int] = []
    opened = threading.Semaphore(0)

    def watch(index: int) -> None:
        with httpx.stream(
            "GET",
            f"{console.url}/api/stream",
            headers=dict(browser.headers),
            cookies=browser.cookies,
            timeout=10.0,
        ) as answer:
            assert answer.status_code == 200
            opened.release()
            for _line in answer.iter_lines():
                pass
        ended.append(index)

    threads = [threading.Thread(target=watch, args=(0,), daemon=True)]
    threads[0].start()
    assert opened.acquire(timeout=10)
    for i in range(1, _hub.MAX_PER_SESSION + 1):
        threads.append(threading.Thread(target=watch, args=(i,), daemon=True))
        threads[-1].start()
        assert opened.acquire(timeout=10)
    deadline = time.monotonic() + 10
    while 0 not in ended and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ended == [0]  # the oldest stream of the session was closed for the newest
    browser.close()


@pytest.mark.parametrize("added_again", [False, True], ids=["revoked", "revoked-then-added-again"])
def test_revoking_a_reviewer_closes_the_live_stream_their_page_holds(
    tmp_path: Path, added_again: bool
) -> None:
    """The page a revoked reviewer has open shows nothing new: its stream ends before the next
    message (issue 38: it went on showing new runs live), and adding the name again with a new
    token does not bring the old page back."""
    db = tmp_path / "console.sqlite3"
    token = add_reviewer(db, "alice")
    lines: list[str] = []
    subscribed, ended = threading.Event(), threading.Event()
    with WebConsoleServer(port=0, db=db) as console:
        alice, _ = logged_in(console, token)

        def watch() -> None:
            try:
                with alice.stream("GET", "/api/stream", timeout=30.0) as answer:
                    subscribed.set()
                    for line in answer.iter_lines():
                        lines.append(line)
            finally:
                ended.set()

        with closing(alice):
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            assert subscribed.wait(10)
            with api_client(console) as api:
                before = {"type": "EnsembleStarted", "run_id": "seen", "total_tasks": 1}
                api.post("/api/events", json={"events": [before]})
                deadline = time.monotonic() + 20
                while not any("seen" in line for line in lines) and time.monotonic() < deadline:
                    time.sleep(0.02)  # the stream works before the revocation
                revoke_reviewer(db, "alice")
                if added_again:
                    add_reviewer(db, "alice")
                after = {"type": "EnsembleStarted", "run_id": "secret-run", "total_tasks": 1}
                api.post("/api/events", json={"events": [after]})
            assert ended.wait(20), "the revoked reviewer's stream stayed open"
            watcher.join(5)
    assert any("seen" in line for line in lines)
    assert not any("secret-run" in line for line in lines)
