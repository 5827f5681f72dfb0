"""The console's history and names in headless Chromium: an open page across restarts, named
reviewers and the audit list, the runs page's search and pages. Screenshots as in
test_web_browser (docs/images/ with AGENTENSEMBLE_WRITE_SCREENSHOTS=1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from _web_support import api_client
from test_web_browser import IMAGES, _wait, driver
from test_web_history import _review, _run_events

from agentensemble_web import WebConsoleServer
from agentensemble_web.reviewers import add_reviewer

pytestmark = pytest.mark.browser
__all__ = ["driver"]  # the module's Chromium, shared by these tests

from selenium.webdriver.common.by import By  # noqa: E402

DECIDED_BY = (By.CSS_SELECTOR, "#decided .decided-by")


def _live(driver: Any) -> str:
    return str(driver.find_element(By.ID, "live").text)


def _page_info(text: str) -> Any:
    return lambda d: d.find_element(By.ID, "page-info").text == text.replace("-", "\N{EN DASH}")


def _rows(driver: Any) -> list[str]:
    return [
        r.get_attribute("data-run-id")
        for r in driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    ]


def test_an_open_page_reconnects_after_a_restart_and_asks_to_log_in_when_its_session_is_gone(
    driver: Any, tmp_path: Path
) -> None:
    db = tmp_path / "console.sqlite3"
    console = WebConsoleServer(port=0, db=db).start()
    port = console.port
    try:
        driver.get(console.login_url)
        _wait(driver, lambda d: _live(d) == "live", "the live stream")
        with api_client(console) as api:
            api.post(
                "/api/events", json={"events": _run_events("run-before", "Before the restart")}
            )
        _wait(driver, lambda d: "run-before" in _rows(d), "the first run")
    finally:
        console.stop()
    _wait(driver, lambda d: _live(d) == "reconnecting…", "the page to notice the restart")

    with WebConsoleServer(port=port, db=db) as console:  # same history, same sessions
        _wait(driver, lambda d: _live(d) == "live", "the page to reconnect by itself")
        with api_client(console) as api:
            api.post("/api/events", json={"events": _run_events("run-after", "After the restart")})
        _wait(driver, lambda d: _rows(d)[:2] == ["run-after", "run-before"], "both runs, live")
        assert not driver.find_element(By.ID, "login-again").is_displayed()

    with WebConsoleServer(port=port, db=tmp_path / "another.sqlite3"):  # the session is gone
        banner = _wait(
            driver,
            lambda d: (
                d.find_element(By.ID, "login-again").is_displayed()
                and d.find_element(By.ID, "login-again")
            ),
            "the page to ask to log in again",
        )
        assert "Log in again" in banner.text
        assert _live(driver) == "logged out"


def test_a_named_reviewer_decides_and_the_run_page_and_audit_show_who(
    driver: Any, tmp_path: Path
) -> None:
    db = tmp_path / "console.sqlite3"
    token = add_reviewer(db, "alice")
    with WebConsoleServer(port=0, db=db) as console:
        with api_client(console) as api:
            api.post("/api/events", json={"events": _run_events("run-1")})
            api.post("/api/reviews", json=_review("r-1", "run-1"))
            task_review = {
                "id": "r-2",
                "timing": "after_execution",
                "task_description": "Greet alice",
                "output": "Hello alice!",
                "timeout_seconds": 300,
                "on_timeout": "exit_early",
            }
            api.post("/api/reviews", json={"run_id": "run-1", "request": task_review})
        driver.get(f"{console.url}/login?token={token}")
        _wait(driver, lambda d: d.find_element(By.ID, "who").text == "signed in as alice", "alice")
        card = _wait(
            driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#reviews .review"), "cards"
        )
        card[0].find_element(By.CSS_SELECTOR, "button.approve").click()
        card = _wait(
            driver,
            lambda d: (
                len(d.find_elements(By.CSS_SELECTOR, "#reviews .review")) == 1
                and d.find_element(By.CSS_SELECTOR, "#reviews .review")
            ),
            "one card left",
        )
        assert "If nobody answers in 5 minutes, the run stops (exit early)." in card.text
        card.find_element(By.CSS_SELECTOR, "button.reject").click()  # "Exit early…" asks first
        assert "Exit early? This stops the whole run now." in card.text
        card.find_element(By.CSS_SELECTOR, "input.reason").send_keys("<b>not</b> today")
        card.find_element(By.CSS_SELECTOR, "button.send-reject").click()
        texts = _wait(
            driver,
            lambda d: len(t := [e.text for e in d.find_elements(*DECIDED_BY)]) == 2 and t,
            "two decided reviews",
        )
        assert (
            texts[0].startswith("Run stopped (exit early) by alice at ")
            and "reason: <b>not</b> today" in texts[0]
        )
        assert texts[1].startswith("Approved by alice at ")

        driver.get(f"{console.url}/#/run/run-1")
        # read inside the wait: the box re-renders as the page's data arrives (a stale element)
        decisions = (
            "send_email: Approved by alice",
            "task output: Run stopped (exit early) by alice",
        )
        _wait(
            driver,
            lambda d: all(x in d.find_element(By.ID, "run-decisions").text for x in decisions),
            "the run's decisions",
        )

        driver.find_element(By.ID, "nav-audit").click()

        def audit_rows(d: Any) -> list[tuple[str, str]] | None:
            rows = d.find_elements(By.CSS_SELECTOR, "#audit tbody tr")
            cells = [
                (
                    r.find_element(By.CSS_SELECTOR, ".reviewer").text,
                    r.find_element(By.CSS_SELECTOR, ".decision").text,
                )
                for r in rows
            ]  # read here: a row re-rendered meanwhile is found again
            return cells if len(cells) == 2 else None

        audit = _wait(driver, audit_rows, "the audit rows")
        assert [reviewer for reviewer, _ in audit] == ["alice"] * 2
        assert audit[0][1] == "exit_early"
        assert not driver.find_elements(By.CSS_SELECTOR, "#audit b")  # the reason is text
        driver.save_screenshot(str(IMAGES / "web-console-audit.png"))


def test_the_runs_page_pages_and_searches(driver: Any, console: WebConsoleServer) -> None:
    with api_client(console) as api:
        events = []
        for i in range(120):
            role = "Writer" if i % 2 else "Critic"
            events += _run_events(f"run-{i:03d}", f"Summarise report number {i}", role)
        api.post("/api/events", json={"events": events})
    driver.get(console.login_url)
    _wait(
        driver,
        lambda d: d.find_element(By.ID, "page-info").text == "1\N{EN DASH}50 of 120",
        "page 1",
    )
    assert _rows(driver)[0] == "run-119"
    assert driver.find_element(By.CSS_SELECTOR, "#runs .run-name a").text == (
        "Summarise report number 119"
    )
    driver.find_element(By.ID, "next-page").click()
    _wait(
        driver,
        lambda d: d.find_element(By.ID, "page-info").text == "51\N{EN DASH}100 of 120",
        "page 2",
    )
    search = driver.find_element(By.ID, "run-search")
    search.send_keys("number 11")
    _wait(
        driver,
        lambda d: d.find_element(By.ID, "page-info").text == "1\N{EN DASH}11 of 11",
        "the search",
    )
    assert driver.switch_to.active_element.get_attribute("id") == "run-search"  # focus kept
    driver.save_screenshot(str(IMAGES / "web-console-runs-search.png"))


def _timed_run(run_id: str, t0: float) -> list[dict[str, Any]]:
    def ev(kind: str, at: float, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "run_id": run_id, "ts": t0 + at, **fields}

    search = {"name": "search", "arguments": '{"q": "meaning of life"}'}
    return [
        ev("EnsembleStarted", 0, total_tasks=1),
        ev(
            "TaskStarted",
            0,
            task_index=1,
            total_tasks=1,
            task_description="Find the answer",
            agent_role="Researcher",
        ),
        ev(
            "LLMCallCompleted",
            1.2,
            task_index=1,
            agent_role="Researcher",
            model="gpt-x",
            duration=1.2,
            tool_calls=1,
            cost_usd=0.00042,
            usage={"total_tokens": 120},
            response={"content": "I will look it up.", "tool_calls": [search]},
        ),
        ev(
            "ToolCallStarted",
            1.2,
            task_index=1,
            call_id="c1",
            agent_role="Researcher",
            task_description="Find the answer",
            **search,
        ),
        ev(
            "ToolCallCompleted",
            1.7,
            task_index=1,
            call_id="c1",
            agent_role="Researcher",
            task_description="Find the answer",
            record={**search, "output": "found: 42", "is_success": True, "duration": 0.5},
        ),
        ev(
            "LLMCallCompleted",
            2.5,
            task_index=1,
            agent_role="Researcher",
            model="gpt-x",
            duration=0.8,
            tool_calls=0,
            cost_usd=0.00001,
            usage={"total_tokens": 80},
            response={"content": "The answer is 42.", "tool_calls": []},
        ),
        ev("LoopIterationCompleted", 2.6, task_index=1, iteration=2, stop_reason="<i>done</i>"),
        ev("TaskCompleted", 2.7, task_index=1, total_tasks=1, output={"raw": "The answer is 42."}),
        ev("EnsembleCompleted", 2.7, output={"exit_reason": "completed"}),
    ]


def test_a_runs_timeline_has_an_axis_durations_costs_and_no_repeated_text(
    driver: Any, console: WebConsoleServer
) -> None:
    import time

    with api_client(console) as api:
        api.post("/api/events", json={"events": _timed_run("run-timed", time.time() - 10)})
    driver.get(console.login_url)
    _wait(driver, lambda d: _live(d) == "live", "the live stream")
    driver.get(f"{console.url}/#/run/run-timed")
    text = _wait(
        driver,
        lambda d: "OUTPUT" in (t := d.find_element(By.ID, "timeline").text) and t,
        "the run's timeline",
    )
    assert text.count('"q": "meaning of life"') == 1  # the call's arguments, once, pretty
    assert text.count("The answer is 42.") == 1  # the final turn is the output, once
    assert "found: 42" in text and "2.7 s" in text  # the task took 2.7 s
    labels = text.lower()  # labels are shown in capitals
    assert "1.2 s" in labels and "500 ms" in labels  # a model turn and a tool call, each timed
    assert "$0.00042" in text and "$0.00001" in text  # two significant digits, never "$0.0000"
    assert not re.search(r"\$0\.0+(?!\d)", driver.find_element(By.ID, "main").text)
    summary = driver.find_element(By.ID, "run-summary").text
    assert (
        "$0.00043" in summary and "Find the answer" in driver.find_element(By.TAG_NAME, "h1").text
    )
    # an event kind the page does not know is shown, generically, as text
    other = driver.find_element(By.CSS_SELECTOR, '.item.other[data-type="LoopIterationCompleted"]')
    assert "loop iteration completed" in other.text.lower() and '"iteration": 2' in other.text
    assert "<i>done</i>" in other.text and not driver.find_elements(By.CSS_SELECTOR, "#timeline i")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#gantt .tick")) >= 3
    assert driver.find_elements(By.CSS_SELECTOR, "#gantt .seg-tool")
    assert driver.find_elements(By.CSS_SELECTOR, "#gantt .seg-model")
    driver.save_screenshot(str(IMAGES / "web-console-timeline.png"))
