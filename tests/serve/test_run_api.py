"""The run API end to end over real HTTP: uvicorn on 127.0.0.1 (the hardened setup) in a thread,
``httpx`` as the client, scripted models. Submit, read, stream (and resume) events, cancel,
decide reviews (approve, edit, reject, edited tool arguments checked against the tool's schema),
and what another caller, a bad body or a foreign page gets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from serve_helpers import hardened_serving

from agentensemble import Agent, Ensemble, Task
from agentensemble.errors import ConfigurationError
from agentensemble.serve import RunAPIReviewHandler, RunLimits, run_api
from agentensemble.testing import (
    FunctionChatModel,
    ScriptedChatModel,
    text,
    tool_call,
    tool_calls,
)
from agentensemble.tools import tool
from agentensemble_review import Review

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"
TOKENS = {"alice": ALICE, "bob": BOB}
WAIT = 30.0
STARTED = threading.Event()
PUBLISHED: list[str] = []


def writer(model: Any, **settings: Any) -> Ensemble:
    agent = Agent(role="Writer", goal="Write about {topic}", llm=model)
    return Ensemble(
        tasks=[Task(description="Write about {topic}.", expected_output="A line.", agent=agent)],
        **settings,
    )


def answering() -> Ensemble:
    return writer(ScriptedChatModel([text("tides follow the moon")]))


def briefly_reviewed() -> Ensemble:
    agent = Agent(role="Writer", goal="Write about {topic}", llm=ScriptedChatModel(["a draft"]))
    gate = Review.required(timeout=timedelta(milliseconds=200))  # on_timeout: exit early
    task = Task(
        description="Write about {topic}.", expected_output="A line.", agent=agent, review=gate
    )
    return Ensemble(tasks=[task], review_handler=RunAPIReviewHandler())


def reviewed() -> Ensemble:
    return writer(
        ScriptedChatModel([text("the unreviewed draft")]),
        review_handler=RunAPIReviewHandler(),
        review_policy="after_last_task",
    )


async def _hangs(messages: Any, tools: Any) -> str:
    STARTED.set()
    await asyncio.Event().wait()  # until cancelled
    return "never"


def slow() -> Ensemble:
    return writer(FunctionChatModel(_hangs))


@tool(requires_approval=True)
def publish(text: str, copies: int = 1) -> str:
    """Publish the text.

    Args:
        text: what to publish
        copies: how many copies
    """
    PUBLISHED.append(text)
    return f"published {text!r}"


def publishing() -> Ensemble:
    model = ScriptedChatModel([tool_call("publish", {"text": "draft"}), text("done")])
    agent = Agent(role="Publisher", goal="Publish {topic}", llm=model, tools=[publish])
    return Ensemble(
        tasks=[Task(description="Publish {topic}.", expected_output="Done.", agent=agent)],
        review_handler=RunAPIReviewHandler(),
    )


ENSEMBLES = {
    "writer": answering,
    "reviewed": reviewed,
    "slow": slow,
    "publisher": publishing,
    "briefly": briefly_reviewed,
}


@pytest.fixture
def base() -> Iterator[str]:
    app = run_api(ENSEMBLES, token=TOKENS, run_limits=RunLimits(keepalive_seconds=0.2))
    with hardened_serving(app) as port:
        yield f"http://127.0.0.1:{port}"


def client(base: str, token: str = ALICE) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT)


def submit(http: httpx.Client, ensemble: str, **inputs: Any) -> str:
    answer = http.post("/runs", json={"ensemble": ensemble, "inputs": inputs or {"topic": "tides"}})
    assert answer.status_code == 202, answer.text
    assert answer.headers["location"] == f"/runs/{answer.json()['run_id']}"
    return str(answer.json()["run_id"])


def wait_for(http: httpx.Client, run_id: str, *states: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        view: dict[str, Any] = http.get(f"/runs/{run_id}").json()
        if view["state"] in states:
            return view
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached {states}: {view}")


def events(
    http: httpx.Client, run_id: str, last: int | None = None
) -> list[tuple[int, dict[str, Any]]]:
    """Every event of the stream until the server ends it: (id, data)."""
    headers = {} if last is None else {"Last-Event-ID": str(last)}
    found: list[tuple[int, dict[str, Any]]] = []
    with http.stream("GET", f"/runs/{run_id}/events", headers=headers) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        number = 0
        for line in stream.iter_lines():
            if line.startswith("id: "):
                number = int(line[4:])
            elif line.startswith("data: "):
                found.append((number, json.loads(line[6:])))
    return found


def pending_review(http: httpx.Client, run_id: str) -> dict[str, Any]:
    wait_for(http, run_id, "waiting_review")
    reviews = http.get(f"/runs/{run_id}/reviews").json()["reviews"]
    assert len(reviews) == 1
    return dict(reviews[0])


def test_a_run_is_submitted_read_and_streamed(base: str) -> None:
    with client(base) as http:
        run_id = submit(http, "writer")
        seen = events(http, run_id)
        view = wait_for(http, run_id, "succeeded")
    assert view["outputs"]["raw"] == "tides follow the moon"
    assert view["outputs"]["tasks"][0]["raw"] == "tides follow the moon"
    assert view["usage"]["tokens"]["total_tokens"] > 0
    assert view["error"] is None and view["exit_reason"] == "completed"
    types = [data["type"] for _, data in seen]
    assert types[0] == "RunState" and "TaskCompleted" in types and "EnsembleCompleted" in types
    assert seen[-1][1] == {"type": "RunState", "state": "succeeded"}
    numbers = [number for number, _ in seen]
    assert numbers == list(range(1, len(numbers) + 1))


def test_the_event_stream_resumes_after_last_event_id(base: str) -> None:
    with client(base) as http:
        run_id = submit(http, "writer")
        everything = events(http, run_id)
        resumed = events(http, run_id, last=3)
        past_end = http.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "999"})
    assert resumed == everything[3:]
    assert past_end.status_code == 204  # an EventSource stops reconnecting


def test_an_idle_stream_gets_keepalive_comments(base: str) -> None:
    with client(base) as http:
        run_id = submit(http, "reviewed")
        pending_review(http, run_id)
        with http.stream("GET", f"/runs/{run_id}/events") as stream:
            lines = stream.iter_lines()
            assert next(line for line in lines if line.startswith(": keepalive"))
        http.post(
            f"/reviews/{pending_review(http, run_id)['review_id']}", json={"decision": "reject"}
        )


def test_a_run_is_cancelled(base: str) -> None:
    STARTED.clear()
    with client(base) as http:
        run_id = submit(http, "slow")
        assert STARTED.wait(WAIT)
        assert wait_for(http, run_id, "running")["state"] == "running"
        answer = http.post(f"/runs/{run_id}/cancel", json={})
        assert answer.status_code == 202
        view = wait_for(http, run_id, "cancelled")
        again = http.post(f"/runs/{run_id}/cancel", json={})
    assert view["outputs"] is None
    assert again.status_code == 409


@pytest.mark.parametrize(
    ("decision", "state", "raw"),
    [
        ({"decision": "approve"}, "succeeded", "the unreviewed draft"),
        (
            {"decision": "edit", "revised_output": "the reviewed text"},
            "succeeded",
            "the reviewed text",
        ),
        ({"decision": "reject", "reason": "off topic"}, "failed", None),
    ],
    ids=["approve", "edit", "reject"],
)
def test_a_review_is_decided_by_the_runs_caller(
    base: str, decision: dict[str, Any], state: str, raw: str | None
) -> None:
    with client(base) as http:
        run_id = submit(http, "reviewed")
        review = pending_review(http, run_id)
        assert review["request"]["output"] == "the unreviewed draft"
        answer = http.post(f"/reviews/{review['review_id']}", json=decision)
        assert answer.status_code == 200, answer.text
        view = wait_for(http, run_id, "succeeded", "failed")
        late = http.post(f"/reviews/{review['review_id']}", json={"decision": "approve"})
    assert view["state"] == state
    assert (view["outputs"] or {}).get("raw") == raw
    if raw is None:  # a rejected output never leaves
        assert "stopped before completing" in view["error"]
    assert [d["decided_by"] for d in view["decisions"]] == ["alice"]
    assert late.status_code == 409


BAD_DECISIONS = [
    ({"decision": "continue"}, "decision must be one of approve, edit, reject"),
    ({"decision": "maybe"}, "decision must be one of"),
    ({}, "decision must be one of"),
    ({"decision": "edit"}, "needs a string 'revised_output'"),
    ({"decision": "edit", "revised_output": 3}, "needs a string 'revised_output'"),
    ({"decision": "reject", "reason": ["x"]}, "'reason' that is not a string"),
    ({"decision": "approve", "approved": True}, "unknown field(s) 'approved'"),
    (["approve"], "must be a JSON object"),
    (  # a reviewer's text is bounded as a run's inputs are
        {"decision": "edit", "revised_output": "x" * 100_001},
        "'revised_output' is 100001 characters; the limit is 100000",
    ),
    ({"decision": "reject", "reason": "x" * 100_001}, "'reason' is 100001 characters"),
]


def test_bad_decisions_are_refused_and_nothing_is_applied(base: str) -> None:
    with client(base) as http:
        run_id = submit(http, "reviewed")
        review_id = pending_review(http, run_id)["review_id"]
        for body, message in BAD_DECISIONS:
            answer = http.post(f"/reviews/{review_id}", json=body)
            assert answer.status_code == 400, body
            assert message in answer.json()["error"], (body, answer.json())
        assert http.get(f"/runs/{run_id}").json()["state"] == "waiting_review"
        http.post(f"/reviews/{review_id}", json={"decision": "reject"})
        wait_for(http, run_id, "failed")


def test_an_edited_tool_call_is_checked_against_the_tools_schema(base: str) -> None:
    PUBLISHED.clear()
    with client(base) as http:
        run_id = submit(http, "publisher")
        review = pending_review(http, run_id)
        assert review["request"]["tool_name"] == "publish"
        url = f"/reviews/{review['review_id']}"
        for arguments, message in [
            ({"copies": 2}, "text"),
            ({"text": "x", "copies": "many"}, "copies"),
            ({"text": "x" * 100_000}, "'arguments' (as JSON) is 100012 characters"),
        ]:
            answer = http.post(url, json={"decision": "edit", "arguments": arguments})
            assert answer.status_code == 400 and message in answer.json()["error"], answer.text
        not_json = http.post(url, json={"decision": "edit", "revised_output": "publish it"})
        assert not_json.status_code == 400
        edited = http.post(url, json={"decision": "edit", "arguments": {"text": "the edit"}})
        assert edited.status_code == 200, edited.text
        view = wait_for(http, run_id, "succeeded")
    assert PUBLISHED == ["the edit"]
    assert view["outputs"]["raw"] == "done"


def test_another_caller_can_neither_read_nor_cancel_nor_decide_a_run(base: str) -> None:
    with client(base) as alice, client(base, BOB) as bob:
        run_id = submit(alice, "reviewed")
        review_id = pending_review(alice, run_id)["review_id"]
        for method, path, body in [
            ("GET", f"/runs/{run_id}", None),
            ("GET", f"/runs/{run_id}/events", None),
            ("GET", f"/runs/{run_id}/reviews", None),
            ("POST", f"/runs/{run_id}/cancel", {}),
            ("POST", f"/reviews/{review_id}", {"decision": "approve"}),
        ]:
            answer = bob.request(method, path, json=body)
            assert answer.status_code == 404, (path, answer.text)
        assert alice.get(f"/runs/{run_id}").json()["state"] == "waiting_review"
        alice.post(f"/reviews/{review_id}", json={"decision": "approve"})
        assert wait_for(alice, run_id, "succeeded")["decisions"][0]["decided_by"] == "alice"


BAD_SUBMISSIONS = [
    ({"ensemble": "nope", "inputs": {"topic": "x"}}, "must name a served ensemble"),
    ({"inputs": {"topic": "x"}}, "must name a served ensemble"),
    ({"ensemble": "writer"}, "missing argument(s): topic"),
    ({"ensemble": "writer", "inputs": {"topic": 3}}, "'topic' must be a string"),
    ({"ensemble": "writer", "inputs": {"topic": "x", "extra": "y"}}, "unknown argument(s)"),
    ({"ensemble": "writer", "inputs": ["x"]}, "'inputs' must be a JSON object"),
    ({"ensemble": "writer", "inputs": {"topic": "x"}, "run_id": "mine"}, "unknown field(s)"),
    ("writer", "must be a JSON object"),
]


@pytest.mark.parametrize(("body", "message"), BAD_SUBMISSIONS, ids=[m for _, m in BAD_SUBMISSIONS])
def test_bad_submissions_are_refused_before_anything_runs(
    base: str, body: Any, message: str
) -> None:
    with client(base) as http:
        answer = http.post("/runs", json=body)
    assert answer.status_code == 400
    assert message in answer.json()["error"]


def test_a_caller_has_a_bounded_number_of_runs_in_flight() -> None:
    STARTED.clear()
    app = run_api(
        {"slow": slow, "writer": answering},
        token=TOKENS,
        run_limits=RunLimits(max_running_per_caller=1),
    )
    with hardened_serving(app) as port:
        base = f"http://127.0.0.1:{port}"
        with client(base) as alice, client(base, BOB) as bob:
            first = submit(alice, "slow")
            second = alice.post("/runs", json={"ensemble": "writer", "inputs": {"topic": "x"}})
            assert second.status_code == 429
            assert "already run 1 runs" in second.json()["error"]
            submit(bob, "writer")  # another caller's bound is its own
            alice.post(f"/runs/{first}/cancel", json={})
            wait_for(alice, first, "cancelled")
            submit(alice, "writer")


def test_finished_runs_are_dropped_oldest_first_past_the_bound() -> None:
    app = run_api({"writer": answering}, token=TOKENS, run_limits=RunLimits(max_runs=2))
    with hardened_serving(app) as port, client(f"http://127.0.0.1:{port}") as http:
        ids = []
        for _ in range(3):
            ids.append(submit(http, "writer"))
            wait_for(http, ids[-1], "succeeded")
        assert http.get(f"/runs/{ids[0]}").status_code == 404
        assert http.get(f"/runs/{ids[2]}").json()["state"] == "succeeded"


def test_a_request_without_the_token_or_from_a_foreign_page_is_refused(base: str) -> None:
    with httpx.Client(base_url=base, timeout=WAIT) as anonymous:
        assert anonymous.post("/runs", json={"ensemble": "writer"}).status_code == 401
    with client(base) as http:
        foreign = http.post(
            "/runs",
            json={"ensemble": "writer", "inputs": {"topic": "x"}},
            headers={"Origin": "http://evil.example"},
        )
        simple = http.post(
            "/runs",
            content=b'{"ensemble": "writer", "inputs": {"topic": "x"}}',
            headers={"Content-Type": "text/plain"},
        )
    assert foreign.status_code == 403
    assert simple.status_code == 415


def test_the_openapi_description_is_served(base: str) -> None:
    with client(base) as http:
        spec = http.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    assert set(spec["paths"]) == {
        "/runs",
        "/runs/{run_id}",
        "/runs/{run_id}/events",
        "/runs/{run_id}/cancel",
        "/runs/{run_id}/reviews",
        "/reviews/{review_id}",
    }
    choices = spec["paths"]["/runs"]["post"]["requestBody"]["content"]["application/json"]
    writer_inputs = next(
        c for c in choices["schema"]["oneOf"] if c["properties"]["ensemble"]["const"] == "writer"
    )
    assert writer_inputs["properties"]["inputs"]["required"] == ["topic"]


def test_review_api_outside_the_run_api_fails_closed() -> None:
    output = reviewed().run({"topic": "tides"})
    assert output.exit_reason.value == "user_exit_early"


@pytest.mark.parametrize(
    ("ensembles", "message"),
    [({}, "at least one ensemble"), ({"has space": answering}, "cannot serve")],
)
def test_bad_setups_are_refused(ensembles: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        run_api(ensembles)


def test_secrets_in_events_and_outputs_are_redacted(base: str) -> None:
    from agentensemble.redaction import register_secret

    secret = "sk-run-api-secret-0123456789abcdef"
    register_secret(secret)

    def leaky() -> Ensemble:
        return writer(ScriptedChatModel([text(f"the key is {secret}")]))

    app = run_api({"leaky": leaky}, token=TOKENS)
    with hardened_serving(app) as port, client(f"http://127.0.0.1:{port}") as http:
        run_id = submit(http, "leaky")
        seen = json.dumps(events(http, run_id))
        view = json.dumps(wait_for(http, run_id, "succeeded"))
    assert secret not in seen and secret not in view
    assert "***" in view


def test_a_page_is_served_at_the_root_without_the_token_and_nothing_else_is() -> None:
    page = "<!doctype html><title>front end</title>"
    app = run_api({"writer": answering}, token=TOKENS, page=page)
    with (
        hardened_serving(app) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=WAIT) as anonymous,
    ):
        shown = anonymous.get("/")
        assert anonymous.get("/openapi.json").status_code == 401
        assert anonymous.post("/runs", json={"ensemble": "writer"}).status_code == 401
    assert shown.status_code == 200 and shown.text == page
    assert shown.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in shown.headers["content-security-policy"]


def test_a_runs_event_buffer_is_bounded_and_a_stream_says_what_it_missed() -> None:
    app = run_api({"writer": answering}, token=TOKENS, run_limits=RunLimits(max_events_per_run=3))
    with hardened_serving(app) as port, client(f"http://127.0.0.1:{port}") as http:
        run_id = submit(http, "writer")
        wait_for(http, run_id, "succeeded")
        kept = events(http, run_id)
        resumed = http.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "1"})
    assert len(kept) == 3
    assert kept[-1][1] == {"type": "RunState", "state": "succeeded"}
    assert "events were dropped (the buffer bound)" in resumed.text


@tool
def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: the page
    """
    return "p" * 19_000


def test_a_runs_events_are_bounded_in_bytes_too() -> None:
    # calls of a big page (the agent's call limit ends the run): about 7 MB of events in under
    # 200, well under max_events_per_run, kept ten minutes a finished run, a thousand runs kept
    def reading() -> Ensemble:
        calls = tool_calls(*[("fetch", {"url": "u" * 19_000})] * 50)
        model = ScriptedChatModel([calls, calls, calls, calls, text("read")])
        agent = Agent(role="Reader", goal="Read {topic}", llm=model, tools=[fetch])
        task = Task(description="Read {topic}.", expected_output="A line.", agent=agent)
        return Ensemble(tasks=[task])

    app = run_api({"reading": reading}, token=TOKENS)
    with hardened_serving(app) as port, client(f"http://127.0.0.1:{port}") as http:
        run_id = submit(http, "reading")
        wait_for(http, run_id, "succeeded", "failed")
        kept = http.get(f"/runs/{run_id}/events")
        resumed = http.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "1"})
    assert len(kept.content) <= 4 * 1024 * 1024 + 64 * 1024  # max_event_bytes_per_run, framing
    assert kept.text.rstrip().endswith('{"type":"RunState","state":"failed"}')  # the newest kept
    assert "events were dropped (the buffer bound)" in resumed.text


def test_a_review_past_its_timeout_or_of_a_cancelled_run_takes_no_decision(base: str) -> None:
    with client(base) as http:
        timed_out = submit(http, "briefly")
        view = wait_for(http, timed_out, "failed")  # on_timeout: exit early, nothing approved
        cancelled = submit(http, "reviewed")
        review_id = pending_review(http, cancelled)["review_id"]
        http.post(f"/runs/{cancelled}/cancel", json={})
        wait_for(http, cancelled, "cancelled")
        late = http.post(f"/reviews/{review_id}", json={"decision": "approve"})
        events_of_timed_out = [data["type"] for _, data in events(http, timed_out)]
    assert view["exit_reason"] == "timeout" and view["outputs"] is None
    assert "ReviewTimedOut" in events_of_timed_out
    assert late.status_code == 410
    assert "no longer pending" in late.json()["error"]


def test_text_shown_to_the_reviewer_is_cleaned_and_bounded() -> None:
    # a bidi override would show the reviewer another address than the one the call uses
    hidden = "ann@example.com\u202e\u200b\x1b[31m" + "z" * 30_000

    def hiding() -> Ensemble:
        model = ScriptedChatModel([tool_call("publish", {"text": hidden}), text("done")])
        agent = Agent(role="Publisher", goal="Publish {topic}", llm=model, tools=[publish])
        task = Task(description="Publish {topic}.", expected_output="Done.", agent=agent)
        return Ensemble(tasks=[task], review_handler=RunAPIReviewHandler())

    app = run_api({"hiding": hiding}, token=TOKENS)
    with hardened_serving(app) as port, client(f"http://127.0.0.1:{port}") as http:
        run_id = submit(http, "hiding")
        review = pending_review(http, run_id)
        http.post(f"/runs/{run_id}/cancel", json={})
        wait_for(http, run_id, "cancelled")
        [pending] = [data for _, data in events(http, run_id) if data["type"] == "ReviewPending"]
    for shown in (review["request"], pending["review"]["request"]):
        for character in ("\u202e", "\u200b", "\x1b"):
            assert character not in json.dumps(shown, ensure_ascii=False)
        assert shown["output"].startswith('{"text": "ann@example.com\\u001b[31mzzz')  # as JSON
        assert len(shown["output"]) < 20_100 and shown["output"].endswith("[truncated]")


def test_a_durable_review_is_shown_as_a_plain_one() -> None:
    from agentensemble.serve._run_api_durable import review_view

    request = {"output": "to ann@example.com\u202e\u200b" + "z" * 30_000, "tool_name": "publish"}
    shown = review_view("run", {"review_id": "run:1", "state": "pending", "request": request})
    assert shown["request"]["output"].startswith("to ann@example.comzzz")
    assert len(shown["request"]["output"]) < 20_100


def test_a_caller_holds_a_bounded_number_of_event_streams_open() -> None:
    # each stream holds a connection: one caller must not take every one the server has
    STARTED.clear()
    app = run_api({"slow": slow}, token=TOKENS)
    with (
        hardened_serving(app) as port,
        client(f"http://127.0.0.1:{port}") as alice,
        client(f"http://127.0.0.1:{port}", BOB) as bob,
        contextlib.ExitStack() as held,
    ):
        run_id = submit(alice, "slow")
        theirs = submit(bob, "slow")
        opened = 0
        while opened < 64:
            stream = held.enter_context(alice.stream("GET", f"/runs/{run_id}/events"))
            if stream.status_code != 200:
                break
            opened += 1
        assert stream.status_code == 429, f"{opened} streams of one caller were all opened"
        assert "event streams open" in stream.read().decode()
        assert opened == RunLimits().max_streams_per_caller
        with bob.stream("GET", f"/runs/{theirs}/events") as other:
            assert other.status_code == 200  # another caller's bound is its own
        held.close()  # alice closes hers: her places come back
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            with alice.stream("GET", f"/runs/{run_id}/events") as again:
                if again.status_code == 200:
                    break
            time.sleep(0.02)
        assert again.status_code == 200
        for caller, ran in ((alice, run_id), (bob, theirs)):
            caller.post(f"/runs/{ran}/cancel", json={})
