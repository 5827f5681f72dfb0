"""The console in headless Chromium (Debian's ``chromium`` + ``chromedriver``; see ``_browser.py``).

One scripted run is watched live while a reviewer approves one email, edits another and rejects
a third in the page; each outcome must reach the run. Screenshots of the runs page, a run page,
a review and the trace viewer are taken on every run; with AGENTENSEMBLE_WRITE_SCREENSHOTS=1
they replace the ones in docs/images/ (shown in docs/web-console.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser import find_browser
from _web_support import SENT, api_client, mailer_ensemble

from agentensemble_web import WebConsoleServer

pytestmark = pytest.mark.browser

# docs/images/ is refreshed on request only (AGENTENSEMBLE_WRITE_SCREENSHOTS=1), so a test run
# leaves the working tree clean; otherwise the screenshots go to a temporary folder
IMAGES = (
    Path(__file__).resolve().parents[2] / "docs" / "images"
    if os.environ.get("AGENTENSEMBLE_WRITE_SCREENSHOTS") == "1"
    else Path(tempfile.mkdtemp(prefix="agentensemble-screenshots-"))
)
WAIT = 20.0

webdriver = pytest.importorskip("selenium.webdriver")
BROWSER = find_browser()
if isinstance(BROWSER, str):
    pytest.skip(BROWSER, allow_module_level=True)
CHROMIUM, CHROMEDRIVER = BROWSER

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    profile = tempfile.mkdtemp(prefix="agentensemble-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    browser = webdriver.Chrome(options=options, service=webdriver.ChromeService(CHROMEDRIVER))
    browser.set_page_load_timeout(WAIT)
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _wait(driver: Any, condition: Any, what: str) -> Any:
    # the page re-renders as events arrive: an element found a moment ago may be gone
    return WebDriverWait(
        driver, WAIT, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)
    ).until(lambda d: condition(d), message=f"timed out waiting for {what}")


def _click(driver: Any, selector: str, what: str) -> None:
    """Click what the selector finds, finding it again if a re-render replaced it meanwhile."""

    def click(d: Any) -> bool:
        d.find_element(By.CSS_SELECTOR, selector).click()
        return True

    _wait(driver, click, what)


def _pending_card(driver: Any, seen: set[str]) -> Any:
    def find(d: Any) -> Any:
        for card in d.find_elements(By.CSS_SELECTOR, "#reviews .review"):
            if card.get_attribute("data-review-id") not in seen:
                return card
        return None

    card = _wait(driver, find, "a new pending review")
    seen.add(card.get_attribute("data-review-id"))
    return card


def test_watch_a_run_and_decide_its_tool_calls_in_the_browser(
    driver: Any, console: WebConsoleServer, tmp_path: Path
) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    driver.get(console.login_url)
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#live.on"), "the live stream")
    # the token is gone from the address bar, and so is the session key (kept in sessionStorage)
    assert driver.current_url == console.url + "/#/"

    SENT.clear()
    box: dict[str, Any] = {}
    run = threading.Thread(
        target=lambda: box.setdefault("output", mailer_ensemble(console).run()), daemon=True
    )
    run.start()
    # the runs table is re-rendered as events arrive: read a row only inside a wait
    _wait(
        driver,
        lambda d: d.find_element(By.CSS_SELECTOR, "#runs tbody tr .status").text == "running",
        "the run, shown as running",
    )
    seen: set[str] = set()

    # 1. approve alice's email: the card says who asks, why, for which run, and what if nobody
    # answers; the arguments are pretty-printed
    card = _pending_card(driver, seen)
    assert '"to": "alice@example.com"' in card.find_element(By.CSS_SELECTOR, ".request-output").text
    _wait(
        driver,
        lambda d: "has not been greeted yet" in card.text,
        "the model's reasoning on the card",
    )
    assert card.find_element(By.CSS_SELECTOR, ".agent").text == "Agent: Mailer"
    assert "If nobody answers in 60 seconds, the call is rejected." in card.text
    link = card.find_element(By.CSS_SELECTOR, "a.run-link")
    run_id = _wait(driver, _run_id, "the run id")
    assert link.get_attribute("href").endswith("#/run/" + run_id)
    assert driver.title.startswith("(1) ")
    driver.save_screenshot(str(IMAGES / "web-console-review.png"))
    card.find_element(By.CSS_SELECTOR, "button.approve").click()
    _wait(
        driver,
        lambda d: d.find_element(By.CSS_SELECTOR, "#decided .review .decided-by").text.startswith(
            "Approved by console at "
        ),
        "the decided review, with who and when",
    )

    # 2. edit bob's email: invalid JSON is caught in the page, a JSON object is sent
    card = _pending_card(driver, seen)
    card.find_element(By.CSS_SELECTOR, "button.edit").click()
    editor = card.find_element(By.CSS_SELECTOR, "textarea.editor")
    assert json.loads(editor.get_attribute("value"))["to"] == "bob@example.com"  # pre-filled
    editor.clear()
    editor.send_keys("[not, json")
    card.find_element(By.CSS_SELECTOR, "button.send-edit").click()
    status = card.find_element(By.CSS_SELECTOR, ".review-status")
    _wait(driver, lambda d: "Not valid JSON" in status.text, "the editor's validation")
    editor.clear()
    editor.send_keys('{"to": "dave@example.com", "subject": "Edited in the browser"}')
    card.find_element(By.CSS_SELECTOR, "button.send-edit").click()

    # 3. reject carol's email with a reason, from the keyboard: R asks to confirm first
    card = _pending_card(driver, seen)
    driver.find_element(By.TAG_NAME, "body").send_keys("r")
    confirm = card.find_element(By.CSS_SELECTOR, ".confirm")
    _wait(driver, lambda d: confirm.is_displayed(), "the rejection's confirmation")
    assert "Reject this call?" in confirm.text
    card.find_element(By.CSS_SELECTOR, "input.reason").send_keys("carol unsubscribed")
    card.find_element(By.CSS_SELECTOR, "button.send-reject").click()

    run.join(timeout=WAIT)
    assert "output" in box, "the run did not finish"
    output = box["output"]
    assert SENT == ["alice@example.com", "dave@example.com"]
    assert "sent to dave@example.com: Edited in the browser" in output.raw
    assert "carol unsubscribed" in output.raw

    _wait(
        driver,
        lambda d: (
            d.find_element(By.CSS_SELECTOR, "#runs tbody tr .status").text == "completed"
            and d.find_element(By.CSS_SELECTOR, "#runs tbody tr .tasks").text == "1/1"
            and not d.find_elements(By.CSS_SELECTOR, "#reviews .review")
        ),
        "the run to show as completed, 1/1 tasks, no review left",
    )
    driver.save_screenshot(str(IMAGES / "web-console-runs.png"))

    _click(driver, "#runs tbody tr a", "the run's link")
    _wait(
        driver,
        # one item per call (arguments shown once): two ran, one was rejected
        lambda d: (
            len(d.find_elements(By.CSS_SELECTOR, "#timeline .item.tool")) == 2
            and len(d.find_elements(By.CSS_SELECTOR, "#timeline .item.failure")) == 1
        ),
        "the run's tool calls",
    )
    _wait(
        driver,
        lambda d: (
            "Edited in the browser" in (text := d.find_element(By.ID, "timeline").text)
            and "carol unsubscribed" in text
        ),
        "the edit and the rejection in the run's timeline",
    )
    # each call that ran shows how long it took, and every call has its mark on the time axis
    # (the wire sends seconds: an ISO-8601 text left both out); labels are shown in capitals
    _wait(
        driver,
        lambda d: (
            len(d.find_elements(By.CSS_SELECTOR, "#gantt .seg-tool")) >= 2
            and len(labels := d.find_elements(By.CSS_SELECTOR, "#timeline .item.tool > .label"))
            >= 2
            and all(re.search(r" · \d+(\.\d)? m?s$", item.text, re.I) for item in labels)
        ),
        "the tool calls' durations and their marks on the axis",
    )
    driver.save_screenshot(str(IMAGES / "web-console-run.png"))

    # the trace viewer opens the same run from its saved file
    assert output.trace is not None
    saved = output.trace.save(tmp_path / "trace.json")
    driver.get(console.url + "/#/trace")
    _wait(driver, lambda d: d.find_elements(By.ID, "trace-file"), "the trace viewer")
    _wait(
        driver,
        lambda d: d.find_element(By.ID, "trace-file").send_keys(str(saved)) or True,
        "the trace file to be chosen",
    )
    _wait(driver, lambda d: d.find_elements(By.ID, "trace-summary"), "the trace to render")
    _wait(
        driver,
        lambda d: (
            output.run_id[:8] in d.find_element(By.ID, "trace-summary").text
            and "carol unsubscribed" in d.find_element(By.ID, "timeline").text
        ),
        "the trace's run and its rejected call",
    )
    driver.save_screenshot(str(IMAGES / "web-console-trace.png"))


def _run_id(driver: Any) -> str | None:
    rows = driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    return rows[0].get_attribute("data-run-id") if rows else None


def test_a_pending_review_is_announced_in_the_title_icon_and_a_notification(
    driver: Any, console: WebConsoleServer
) -> None:
    from test_web_security import _review

    driver.get(console.login_url)
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#live.on"), "the live stream")
    driver.execute_cdp_cmd(
        "Browser.grantPermissions", {"origin": console.url, "permissions": ["notifications"]}
    )
    driver.execute_script("localStorage.clear(); document.body.dataset.notified = '0';")
    driver.refresh()
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#live.on"), "the live stream")
    assert driver.find_element(By.ID, "toggle-notify").text == "Notifications: on"
    with api_client(console) as api:
        api.post("/api/reviews", json=_review("r-note-1"))
        _wait(driver, lambda d: d.title == "(1) agentensemble console", "the count in the title")
        _wait(
            driver,
            lambda d: d.execute_script("return document.body.dataset.notified") == "1",
            "a desktop notification",
        )
        icon = driver.find_element(By.CSS_SELECTOR, "link[rel=icon]").get_attribute("href")
        assert icon.startswith("data:image/png")
        # turned off: the title still counts, no notification is shown
        driver.find_element(By.ID, "toggle-notify").click()
        assert driver.find_element(By.ID, "toggle-notify").text == "Notifications: off"
        api.post("/api/reviews", json=_review("r-note-2"))
        _wait(driver, lambda d: d.title == "(2) agentensemble console", "two in the title")
        assert driver.execute_script("return document.body.dataset.notified") == "1"
        # a review about to expire stands out; one with time left does not
        api.post("/api/reviews", json=_review("r-soon", timeout=15))
        _wait(
            driver,
            lambda d: d.find_elements(By.CSS_SELECTOR, '.review.urgent[data-review-id="r-soon"]'),
            "the review about to expire to stand out",
        )
        assert not driver.find_elements(
            By.CSS_SELECTOR, '.review.urgent[data-review-id="r-note-1"]'
        )
        for review_id in ("r-note-1", "r-note-2", "r-soon"):
            api.post(f"/api/reviews/{review_id}/expire", json={})
    _wait(driver, lambda d: d.title == "agentensemble console", "no count once none is pending")
    # the decided list re-renders as the three expiries arrive: read it inside the wait
    _wait(
        driver,
        lambda d: any(
            "the call is rejected" in card.text
            for card in d.find_elements(By.CSS_SELECTOR, "#decided .review.expired")
        ),
        "an expired review in the decided list, saying the call is rejected",
    )


def test_hostile_run_text_is_shown_as_text(driver: Any, console: WebConsoleServer) -> None:
    """In every view: the runs list (the run's name and agents), the run page, a review card
    (tool, arguments, the model's reasoning), the decided list and the audit."""
    hostile = '<img src=x id=pwned onerror="document.title=1">\u202eevil'
    turn = {"content": hostile, "tool_calls": [{"name": "<b>tool</b>", "arguments": hostile}]}
    with api_client(console) as api:
        api.post(
            "/api/events",
            json={
                "events": [
                    {"type": "EnsembleStarted", "run_id": "run-hostile", "total_tasks": 1},
                    {
                        "type": "TaskStarted",
                        "run_id": "run-hostile",
                        "task_index": 1,
                        "total_tasks": 1,
                        "task_description": hostile,
                        "agent_role": "<b>x</b>",
                    },
                    {
                        "type": "LLMCallCompleted",
                        "run_id": "run-hostile",
                        "task_index": 1,
                        "agent_role": "<b>x</b>",
                        "model": hostile,
                        "response": turn,
                    },
                    {"type": hostile, "run_id": "run-hostile", "task_index": 1, hostile: hostile},
                ]
            },
        )
        review = {
            "id": hostile,
            "timing": "during_execution",
            "task_description": hostile,
            "output": hostile,
            "prompt": hostile,
            "tool_name": "<b>tool</b>",
            "timeout_seconds": 60,
        }
        api.post("/api/reviews", json={"run_id": "run-hostile", "request": review})
        review2 = dict(review, id="second", tool_name="other")
        api.post("/api/reviews", json={"run_id": "run-hostile", "request": review2})
        driver.get(console.login_url)
        _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#runs tbody tr"), "the run")
        assert "<img src=x" in driver.find_element(By.ID, "runs").text
        # the list may re-render as the live stream connects: read the text inside the wait
        _wait(
            driver,
            lambda d: any(
                "<img src=x" in card.text
                for card in d.find_elements(By.CSS_SELECTOR, "#reviews .review .reasoning")
            ),
            "the card with its reasoning, shown as text",
        )
        assert "Tool call: <b>tool</b>" in driver.find_element(By.ID, "reviews").text
        api.post("/api/reviews/second/expire", json={})
    _wait(
        driver,
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#reviews .review")) == 1,
        "the expired review to leave the pending list",
    )
    _click(driver, "#reviews .review button.reject", "the reject button")
    driver.find_element(By.CSS_SELECTOR, "#reviews .review input.reason").send_keys(hostile)
    driver.find_element(By.CSS_SELECTOR, "#reviews .review button.send-reject").click()
    _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#decided .review")) == 2, "dec")
    driver.get(console.url + "/#/run/run-hostile")
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline .task"), "the task")
    assert not driver.find_elements(By.ID, "pwned")
    text = _wait(driver, lambda d: d.find_element(By.ID, "timeline").text, "the timeline's text")
    assert "<img src=x" in text and "\\u202eevil" in text and "\u202e" not in text
    driver.get(console.url + "/#/audit")
    _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#audit tbody tr")) == 2, "audit")
    assert "<img src=x" in driver.find_element(By.ID, "audit").text
    assert not driver.find_elements(By.ID, "pwned") and not driver.find_elements(By.TAG_NAME, "b")
    assert driver.title != "1"


def test_parallel_tasks_show_as_overlapping_bars(driver: Any, console: WebConsoleServer) -> None:
    import asyncio

    from agentensemble import Agent, Ensemble, Task, Workflow
    from agentensemble.testing import FunctionChatModel
    from agentensemble_web import WebConsole

    both_started = asyncio.Event()
    arrived: list[int] = []

    async def meet_then_answer(messages: Any, tools: Any) -> str:
        arrived.append(1)  # both tasks are in their model call before either finishes
        if len(arrived) >= 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), WAIT)
        return "done"

    agent = Agent(role="Worker", goal="Work", llm=FunctionChatModel(meet_then_answer))
    listener = WebConsole(console.url, console.token)
    output = Ensemble(
        tasks=[Task(description=f"Branch {i}", expected_output="x", agent=agent) for i in (1, 2)],
        workflow=Workflow.PARALLEL,
        listeners=[listener],
    ).run()
    assert listener.flush(WAIT)
    driver.get(console.login_url)
    driver.get(f"{console.url}/#/run/{output.run_id}")
    bars = _wait(
        driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#gantt .bar")) == 2, "two bars"
    )
    assert bars
    spans = driver.execute_script(
        "return [...document.querySelectorAll('#gantt .bar')].map("
        "b => {const r = b.getBoundingClientRect(); return [r.left, r.right];});"
    )
    (a_left, a_right), (b_left, b_right) = spans
    assert a_left < b_right and b_left < a_right, spans  # the branches ran at the same time
