"""The console in headless Chromium (Debian's ``chromium`` + ``chromedriver``; see ``_browser.py``).

One scripted run is watched live while a reviewer approves one email, edits another and rejects
a third in the page; each outcome must reach the run. Screenshots of the runs page, a run page,
a review and the trace viewer are taken on every run; with AGENTENSEMBLE_WRITE_SCREENSHOTS=1
they replace the ones in docs/images/ (shown in docs/web-console.md).
"""

from __future__ import annotations

import json
import os
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
    assert driver.current_url == console.url + "/"  # the token is gone from the address bar

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

    # 1. approve alice's email
    card = _pending_card(driver, seen)
    assert "alice@example.com" in card.find_element(By.CSS_SELECTOR, ".request-output").text
    driver.save_screenshot(str(IMAGES / "web-console-review.png"))
    card.find_element(By.CSS_SELECTOR, "button.approve").click()

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

    # 3. reject carol's email with a reason
    card = _pending_card(driver, seen)
    card.find_element(By.CSS_SELECTOR, "button.reject").click()
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
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#timeline .item.tool")) >= 3,
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


def test_hostile_run_text_is_shown_as_text(driver: Any, console: WebConsoleServer) -> None:
    hostile = '<img src=x id=pwned onerror="document.title=1">\u202eevil'
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
                ]
            },
        )
    driver.get(console.login_url)
    driver.get(console.url + "/#/run/run-hostile")
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline .task"), "the task")
    assert not driver.find_elements(By.ID, "pwned")
    text = _wait(driver, lambda d: d.find_element(By.ID, "timeline").text, "the timeline's text")
    assert "<img src=x" in text and "\\u202eevil" in text and "\u202e" not in text


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
