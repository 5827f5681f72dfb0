"""The console's history and names in headless Chromium: an open page across restarts, named
reviewers and the audit list, the runs page's search and pages. Screenshots as in
test_web_browser (docs/images/ with AGENTENSEMBLE_WRITE_SCREENSHOTS=1)."""

from __future__ import annotations

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
            api.post("/api/reviews", json=_review("r-2", "run-1"))
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
        card.find_element(By.CSS_SELECTOR, "button.reject").click()
        card.find_element(By.CSS_SELECTOR, "input.reason").send_keys("<b>not</b> today")
        card.find_element(By.CSS_SELECTOR, "button.send-reject").click()
        _wait(
            driver,
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#decided .review")) == 2,
            "two decided reviews",
        )
        texts = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#decided .decided-by")]
        assert (
            texts[0].startswith("Rejected by alice at ") and "reason: <b>not</b> today" in texts[0]
        )
        assert texts[1].startswith("Approved by alice at ")

        driver.get(f"{console.url}/#/run/run-1")
        box = _wait(
            driver, lambda d: d.find_elements(By.ID, "run-decisions"), "the run's decisions"
        )
        assert "send_email: Approved by alice" in box[0].text

        driver.find_element(By.ID, "nav-audit").click()
        rows = _wait(
            driver,
            lambda d: (
                len(d.find_elements(By.CSS_SELECTOR, "#audit tbody tr")) == 2
                and d.find_elements(By.CSS_SELECTOR, "#audit tbody tr")
            ),
            "the audit rows",
        )
        assert [r.find_element(By.CSS_SELECTOR, ".reviewer").text for r in rows] == ["alice"] * 2
        assert rows[0].find_element(By.CSS_SELECTOR, ".decision").text == "exit_early"
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
