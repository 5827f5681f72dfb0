"""A whole run reporting to the console, its tool calls decided over HTTP as a browser does."""

from __future__ import annotations

import json
import threading
import time
from contextlib import closing
from typing import Any

from _web_support import SENT, api_client, logged_in, mailer_ensemble, wait_for_pending

from agentensemble import EnsembleOutput
from agentensemble_web import WebConsole, WebConsoleServer


def _run_in_thread(ensemble: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["output"] = ensemble.run()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def test_approve_edit_and_reject_reach_the_run(console: WebConsoleServer) -> None:
    SENT.clear()
    listener = WebConsole(console.url, console.token)
    thread, box = _run_in_thread(mailer_ensemble(console, listener=listener))
    browser, csrf = logged_in(console)
    headers = {"X-CSRF-Token": csrf, "Origin": console.url}
    decisions = [
        {"decision": "continue"},
        {
            "decision": "edit",
            "revised_output": json.dumps({"to": "dave@example.com", "subject": "Hi"}),
        },
        {"decision": "exit_early", "reason": "carol asked not to be mailed"},
    ]
    with closing(browser):
        for decision in decisions:
            (review,) = wait_for_pending(browser)
            assert review["request"]["tool_name"] == "send_email"
            answer = browser.post(
                f"/api/reviews/{review['id']}/decision", json=decision, headers=headers
            )
            assert answer.status_code == 200, answer.text
        thread.join(timeout=30)
        assert not thread.is_alive()
        assert "error" not in box, box.get("error")
        output: EnsembleOutput = box["output"]
        assert SENT == ["alice@example.com", "dave@example.com"]
        assert "sent to alice@example.com" in output.raw
        assert "sent to dave@example.com: Hi" in output.raw
        assert "carol asked not to be mailed" in output.raw

        assert listener.flush(10)
        run = browser.get(f"/api/runs/{output.run_id}").json()
    assert run["run"]["status"] == "completed"
    assert (run["run"]["tasks_done"], run["run"]["tasks_total"]) == (1, 1)
    assert run["run"]["tokens"] > 0
    kinds = [event["type"] for event in run["events"]]
    for kind in ("EnsembleStarted", "TaskStarted", "ToolCallStarted", "ReviewRequested"):
        assert kind in kinds
    assert kinds.count("ToolCallCompleted") == 3
    assert kinds[-1] == "EnsembleCompleted"


def test_an_undecided_review_applies_on_timeout(console: WebConsoleServer) -> None:
    SENT.clear()
    output = mailer_ensemble(console, timeout=1.5).run()
    assert SENT == []  # every email timed out: EXIT_EARLY rejects the call, never approves it
    assert output.raw.count("timed out") == 3
    with api_client(console) as api:
        deadline = time.monotonic() + 10  # the console expires a review at its own deadline too
        while True:
            reviews = api.get("/api/reviews").json()["reviews"]
            if [r["status"] for r in reviews] == ["expired"] * 3 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert [r["status"] for r in reviews] == ["expired"] * 3
        late = api.post(f"/api/reviews/{reviews[0]['id']}/decision", json={"decision": "continue"})
        assert late.status_code == 410


def test_two_reviewers_at_once_the_first_wins(console: WebConsoleServer) -> None:
    SENT.clear()
    thread, box = _run_in_thread(mailer_ensemble(console))
    first, first_csrf = logged_in(console)
    second, second_csrf = logged_in(console)
    with closing(first), closing(second):
        for _ in range(3):
            (review,) = wait_for_pending(first)
            url = f"/api/reviews/{review['id']}/decision"
            barrier = threading.Barrier(2)
            answers: dict[str, int] = {}

            def decide(
                name: str,
                client: Any,
                csrf: str,
                body: dict[str, Any],
                url: str = url,
                barrier: threading.Barrier = barrier,
                answers: dict[str, int] = answers,
            ) -> None:
                barrier.wait(timeout=10)
                answer = client.post(url, json=body, headers={"X-CSRF-Token": csrf})
                answers[name] = answer.status_code

            reviewers = [
                threading.Thread(
                    target=decide, args=("a", first, first_csrf, {"decision": "continue"})
                ),
                threading.Thread(
                    target=decide,
                    args=("b", second, second_csrf, {"decision": "exit_early", "reason": "no"}),
                ),
            ]
            for reviewer in reviewers:
                reviewer.start()
            for reviewer in reviewers:
                reviewer.join(timeout=15)
            assert sorted(answers.values()) == [200, 409]
        thread.join(timeout=30)
    assert "output" in box, box.get("error")
    # each email went out exactly when its winning decision approved it, never twice
    assert len(SENT) == len(set(SENT)) <= 3
    assert box["output"].raw.count("sent to") == len(SENT)


def test_an_unreachable_console_never_slows_or_fails_the_run() -> None:
    """The console is down: the listener drops events and the review fails closed."""
    unused = WebConsoleServer(port=0)
    unused.bind()
    url, token = unused.url, unused.token
    unused.stop()  # nothing listens there any more
    listener = WebConsole(url, token, max_queue=5)

    class _Console:
        pass

    fake = _Console()
    fake.url, fake.token = url, token  # type: ignore[attr-defined]
    SENT.clear()
    started = time.monotonic()
    output = mailer_ensemble(fake, listener=listener).run()  # type: ignore[arg-type]
    assert SENT == []  # no reviewer could be asked: every call rejected, none approved
    assert output.raw.count("could not be reached") == 3
    assert listener.delivered == 0
    assert listener.dropped + listener.failed_posts > 0
    assert time.monotonic() - started < 30  # bounded: no wait for reviews that cannot come


def test_a_stuck_console_never_blocks_on_event() -> None:
    """A console that accepts connections and never answers: ``on_event`` still returns at once
    and events beyond the queue's bound are dropped, not waited for."""
    import socket

    from agentensemble.events import TaskStarted

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)  # accepts into the backlog, never reads
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        listener = WebConsole(url, "token", max_queue=10, post_timeout=30.0)
        for index in range(1, 200):
            listener.on_event(TaskStarted(index, 200, "t", "a", run_id="r"))
        assert listener.dropped >= 150
        assert listener.delivered == 0
    finally:
        sock.close()


def test_an_event_that_cannot_be_converted_is_skipped_not_raised(
    console: WebConsoleServer,
) -> None:
    from dataclasses import dataclass

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr for you")

    @dataclass(frozen=True)
    class Strange:
        run_id: str
        payload: object

    listener = WebConsole(console.url, console.token)
    listener.on_event(Strange("r", Hostile()))  # must not raise into the run
    listener.on_event(Strange("r", "fine"))
    assert listener.flush(10)
    assert listener.delivered == 1


def test_big_events_are_split_into_batches_the_console_accepts(
    console: WebConsoleServer,
) -> None:
    from dataclasses import dataclass

    from agentensemble.events import LLMCallStarted

    @dataclass(frozen=True)
    class Enormous:
        run_id: str
        payload: dict[str, str]

    long_conversation = [{"role": "user", "content": "x" * 30_000}] * 100
    listener = WebConsole(console.url, console.token)
    for _ in range(5):  # ~600 kB each once bounded: two never fit in one batch
        listener.on_event(
            LLMCallStarted("Writer", "m", "call-1", messages=long_conversation, run_id="big")
        )
    listener.on_event(Enormous("big", {str(i): "y" * 20_000 for i in range(200)}))  # ~4 MB
    assert listener.flush(30)
    assert (listener.delivered, listener.dropped, listener.failed_posts) == (5, 1, 0)
    with api_client(console) as api:
        events = api.get("/api/runs/big").json()["events"]
    assert len(events) == 5
    assert len(events[0]["messages"]) == 30  # the last messages of the conversation
