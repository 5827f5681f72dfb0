"""The console's security model, attacked over plain HTTP against a real uvicorn server.

No login, a foreign Host, another Origin, a missing CSRF token, a replayed decision, a decision
for an unknown or expired review: each is refused with its status and changes nothing.
"""

from __future__ import annotations

import time
from contextlib import closing

import httpx
import pytest
from _web_support import api_client, logged_in

from agentensemble_web import WebConsoleServer

ROUTES = [
    ("GET", "/"),
    ("GET", "/static/app.js"),
    ("GET", "/static/timeline.js"),
    ("GET", "/static/memory.js"),
    ("GET", "/static/workflow.js"),
    ("GET", "/static/app.css"),
    ("GET", "/static/reviews.js"),
    ("GET", "/static/live.js"),
    ("GET", "/api/audit"),
    ("GET", "/api/session"),
    ("GET", "/api/stream"),
    ("GET", "/api/runs"),
    ("GET", "/api/runs/some-run"),
    ("GET", "/api/reviews"),
    ("GET", "/api/reviews/some-review"),
    ("POST", "/api/events"),
    ("POST", "/api/reviews"),
    ("POST", "/api/reviews/some-review/decision"),
    ("POST", "/api/reviews/some-review/expire"),
    ("GET", "/no/such/page"),
    ("GET", "/login"),
]


def _review(review_id: str = "r-1", timeout: float = 60.0, tool: str | None = "send") -> dict:
    return {
        "run_id": "run-1",
        "request": {
            "id": review_id,
            "timing": "during_execution" if tool else "after_execution",
            "task_description": "greet",
            "output": '{"to": "alice"}',
            "tool_name": tool,
            "timeout_seconds": timeout,
            "on_timeout": "exit_early",
        },
    }


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route_needs_a_login(console: WebConsoleServer, method: str, path: str) -> None:
    with httpx.Client(base_url=console.url, timeout=10.0) as client:
        answer = client.request(method, path, json={} if method == "POST" else None)
    assert answer.status_code == 401
    assert answer.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]


@pytest.mark.parametrize(
    "header", ["Bearer wrong", "Basic abc", "bearer"], ids=["wrong", "basic", "bare"]
)
def test_a_wrong_token_is_refused(console: WebConsoleServer, header: str) -> None:
    with httpx.Client(base_url=console.url, timeout=10.0) as client:
        assert client.get("/api/runs", headers={"Authorization": header}).status_code == 401
        assert client.get("/login?token=wrong").status_code == 401
        assert "set-cookie" not in client.get("/login?token=wrong").headers


def test_login_sets_a_strict_http_only_session_cookie(console: WebConsoleServer) -> None:
    with httpx.Client(base_url=console.url, timeout=10.0) as client:
        answer = client.get(f"/login?token={console.token}", follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"].startswith("/#key=")
        cookie = answer.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        page = client.get("/")
        assert page.status_code == 200 and "agentensemble console" in page.text
        assert page.headers["x-frame-options"] == "DENY"
        assert "script-src 'self'" in page.headers["content-security-policy"]


@pytest.mark.parametrize("host", ["evil.example", "attacker.test:80", "127.0.0.1.evil.test"])
def test_a_foreign_host_is_refused_even_with_the_token(
    console: WebConsoleServer, host: str
) -> None:
    with api_client(console) as client:
        answer = client.get("/api/runs", headers={"Host": host})
        assert answer.status_code == 403
        posted = client.post("/api/reviews", json=_review(), headers={"Host": host})
        assert posted.status_code == 403
        assert client.get("/api/reviews").json()["reviews"] == []


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "https://127.0.0.1", "http://127.0.0.1:1"]
)
def test_a_decision_from_another_origin_is_refused(console: WebConsoleServer, origin: str) -> None:
    with api_client(console) as api:
        api.post("/api/reviews", json=_review())
    browser, csrf = logged_in(console)
    with closing(browser):
        answer = browser.post(
            "/api/reviews/r-1/decision",
            json={"decision": "continue"},
            headers={"X-CSRF-Token": csrf, "Origin": origin},
        )
        assert answer.status_code == 403
        assert browser.get("/api/reviews/r-1").json()["status"] == "pending"


@pytest.mark.parametrize("csrf", [None, "", "not-the-token"], ids=["missing", "empty", "wrong"])
def test_a_decision_without_the_sessions_csrf_token_is_refused(
    console: WebConsoleServer, csrf: str | None
) -> None:
    with api_client(console) as api:
        api.post("/api/reviews", json=_review())
    browser, _ = logged_in(console)
    headers = {"Origin": console.url} | ({"X-CSRF-Token": csrf} if csrf is not None else {})
    with closing(browser):
        answer = browser.post(
            "/api/reviews/r-1/decision", json={"decision": "continue"}, headers=headers
        )
        assert answer.status_code == 403
        assert browser.get("/api/reviews/r-1").json()["status"] == "pending"


def test_a_decision_must_be_json(console: WebConsoleServer) -> None:
    with api_client(console) as api:
        api.post("/api/reviews", json=_review())
        answer = api.post(
            "/api/reviews/r-1/decision",
            content=b"decision=continue",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert answer.status_code == 415
        assert api.get("/api/reviews/r-1").json()["status"] == "pending"


def test_a_replayed_decision_is_refused_and_the_first_stands(console: WebConsoleServer) -> None:
    browser, csrf = logged_in(console)
    headers = {"X-CSRF-Token": csrf, "Origin": console.url}
    with api_client(console) as api, closing(browser):
        api.post("/api/reviews", json=_review())
        first = browser.post(
            "/api/reviews/r-1/decision", json={"decision": "continue"}, headers=headers
        )
        assert first.status_code == 200
        again = browser.post(
            "/api/reviews/r-1/decision",
            json={"decision": "exit_early", "reason": "too late"},
            headers=headers,
        )
        assert again.status_code == 409
        assert again.json()["decision"]["decision"] == "continue"  # the late reviewer is told
        assert api.get("/api/reviews/r-1").json()["decision"]["decision"] == "continue"


def test_a_decision_for_an_unknown_review_is_refused(console: WebConsoleServer) -> None:
    with api_client(console) as api:
        answer = api.post("/api/reviews/nope/decision", json={"decision": "continue"})
        assert answer.status_code == 404
        assert api.get("/api/reviews").json()["reviews"] == []


def test_a_decision_for_an_expired_review_is_refused(console: WebConsoleServer) -> None:
    with api_client(console) as api:
        api.post("/api/reviews", json=_review(timeout=0.2))
        deadline = time.monotonic() + 10
        while api.get("/api/reviews/r-1").json()["status"] != "expired":
            assert time.monotonic() < deadline, "the review never expired"
            time.sleep(0.05)
        answer = api.post("/api/reviews/r-1/decision", json={"decision": "continue"})
        assert answer.status_code == 410
        assert api.get("/api/reviews/r-1").json()["decision"] is None


@pytest.mark.parametrize(
    ("revised", "accepted"),
    [('{"to": "dave@example.com"}', True), ("[1, 2]", False), ("not json", False), ('"x"', False)],
)
def test_an_edited_tool_call_must_be_a_json_object(
    console: WebConsoleServer, revised: str, accepted: bool
) -> None:
    with api_client(console) as api:
        api.post("/api/reviews", json=_review())
        answer = api.post(
            "/api/reviews/r-1/decision", json={"decision": "edit", "revised_output": revised}
        )
        assert answer.status_code == (200 if accepted else 400)
        status = api.get("/api/reviews/r-1").json()["status"]
        assert status == ("decided" if accepted else "pending")


def test_an_oversized_body_is_refused(console: WebConsoleServer) -> None:
    with api_client(console) as api:
        answer = api.post(
            "/api/events",
            content=b'{"events": ["' + b"x" * 2_100_000 + b'"]}',
            headers={"Content-Type": "application/json"},
        )
        assert answer.status_code == 413
        assert api.get("/api/runs").json()["runs"] == []


def test_only_the_review_handler_may_expire_a_review(console: WebConsoleServer) -> None:
    browser, csrf = logged_in(console)
    with api_client(console) as api, closing(browser):
        api.post("/api/reviews", json=_review())
        answer = browser.post("/api/reviews/r-1/expire", json={}, headers={"X-CSRF-Token": csrf})
        assert answer.status_code == 403
        assert api.get("/api/reviews/r-1").json()["status"] == "pending"


def test_a_browser_session_cannot_write_a_runs_history_or_hold_reviews(
    console: WebConsoleServer,
) -> None:
    """Reviewers decide; what runs did and which reviews wait is the run's process's to report
    (the console's token). A logged-in page, with its CSRF token, posting a forged event into a
    real run or a review of its own is refused, and nothing changes."""
    browser, csrf = logged_in(console)
    with api_client(console) as api, closing(browser):
        api.post("/api/events", json={"events": [{"type": "EnsembleStarted", "run_id": "run-1"}]})
        forged = {"type": "TaskCompleted", "run_id": "run-1", "output": {"raw": "all fine"}}
        for path, body in (
            ("/api/events", {"events": [forged]}),
            ("/api/reviews", _review("r-forged")),
        ):
            answer = browser.post(path, json=body, headers={"X-CSRF-Token": csrf})
            assert answer.status_code == 403, path
            assert "only the run's process" in answer.json()["error"]
        assert [e["type"] for e in api.get("/api/runs/run-1").json()["events"]] == [
            "EnsembleStarted"
        ]
        assert api.get("/api/reviews").json()["reviews"] == []
        assert api.post("/api/reviews", json=_review("r-2")).status_code == 201  # its process may


def test_hostile_event_text_is_stored_escaped(console: WebConsoleServer) -> None:
    event = {
        "type": "TaskStarted",
        "run_id": "run-x",
        "task_description": "<script>alert(1)</script>\u202egnp.exe\x1b[2J",
        "total_tasks": 1,
    }
    with api_client(console) as api:
        assert api.post("/api/events", json={"events": [event, {"type": 3}]}).json() == {
            "accepted": 1,
            "refused": 1,
        }
        stored = api.get("/api/runs/run-x").json()["events"][0]["task_description"]
    assert "\u202e" not in stored and "\x1b" not in stored
    assert "\\u202e" in stored and "\\x1b" in stored


def _cookie_only(console: WebConsoleServer) -> httpx.Client:
    """What another server on 127.0.0.1 holds after a browser visited it: the session cookie
    (browsers send it to every port of the host), and nothing the page kept for itself."""
    client = httpx.Client(base_url=console.url, timeout=10.0)
    answer = client.get(f"/login?token={console.token}", follow_redirects=False)
    assert answer.status_code == 303
    return client


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/session"),
        ("GET", "/api/stream"),
        ("GET", "/api/runs"),
        ("GET", "/api/runs/run-1"),
        ("GET", "/api/reviews"),
        ("GET", "/api/reviews/r-1"),
        ("GET", "/api/audit"),
        ("POST", "/api/reviews/r-1/decision"),
    ],
)
def test_the_session_cookie_alone_reads_and_decides_nothing(
    console: WebConsoleServer, method: str, path: str
) -> None:
    with api_client(console) as api:
        api.post("/api/reviews", json=_review())
    with closing(_cookie_only(console)) as stolen:
        headers = {"Origin": console.url, "X-CSRF-Token": "guessed"}
        answer = stolen.request(
            method,
            path,
            json={"decision": "continue"} if method == "POST" else None,
            headers=headers if method == "POST" else None,
        )
    assert answer.status_code == 401, answer.text
    with api_client(console) as api:
        assert api.get("/api/reviews/r-1").json()["status"] == "pending"


def test_the_session_key_comes_in_the_fragment_and_is_never_served_back(
    console: WebConsoleServer,
) -> None:
    with api_client(console) as api:
        api.post("/api/reviews", json=_review())
    client = httpx.Client(base_url=console.url, timeout=10.0)
    with closing(client):
        answer = client.get(f"/login?token={console.token}", follow_redirects=False)
        location = answer.headers["location"]
        assert location.startswith("/#key=")
        key = location.split("#key=", 1)[1]
        assert len(key) >= 32
        headers = {"X-Session-Key": key}
        bodies = [
            client.get(path, headers=headers)
            for path in ("/", "/api/session", "/api/runs", "/api/reviews", "/api/audit")
        ]
        assert all(b.status_code == 200 for b in bodies), [b.text for b in bodies]
        assert not any(key in b.text or key in str(b.headers) for b in bodies)
        wrong = client.get("/api/runs", headers={"X-Session-Key": key[:-2] + "xx"})
        assert wrong.status_code == 401


@pytest.mark.parametrize("https", [False, True], ids=["http", "https-behind-a-local-proxy"])
def test_the_session_cookie_flags(console: WebConsoleServer, https: bool) -> None:
    """HttpOnly and SameSite=Strict always; Secure when the console is reached over HTTPS (a
    TLS proxy on this machine saying so with X-Forwarded-Proto), so the browser never sends the
    session id over plain HTTP. It was never Secure."""
    headers = {"X-Forwarded-Proto": "https"} if https else {}
    with httpx.Client(base_url=console.url, timeout=10.0) as client:
        answer = client.get(f"/login?token={console.token}", headers=headers)
    flags = [part.strip() for part in answer.headers["set-cookie"].split(";")[1:]]
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(flags)
    assert ("Secure" in flags) is https
