"""The 20-line page of docs/serve.md in headless Chromium: served by the run API at ``/``, it
submits a run and shows its events as they stream (``fetch``, the token from the fragment).
Skipped, in one line, where Chromium is absent (tests/web/_browser.py)."""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import hardened_serving

from agentensemble import Agent, Ensemble, Task
from agentensemble.serve import run_api
from agentensemble.testing import ScriptedChatModel, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from _browser import find_browser  # type: ignore[import-not-found]

pytestmark = pytest.mark.browser
WAIT = 20.0
TOKEN = "a-page-token-0123456789"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "serve.md"

webdriver = pytest.importorskip("selenium.webdriver")
BROWSER = find_browser()
if isinstance(BROWSER, str):
    pytest.skip(BROWSER, allow_module_level=True)
CHROMIUM, CHROMEDRIVER = BROWSER

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def the_docs_page() -> str:
    """The page as docs/serve.md shows it (the html block after ``<!-- run-api-page -->``)."""
    found = re.search(r"<!-- run-api-page -->\n```html\n(.*?)```", DOCS.read_text(), re.S)
    assert found, "docs/serve.md lost its run API page"
    page = found.group(1)
    assert len(page.splitlines()) <= 20
    return page


def writer() -> Ensemble:
    model = ScriptedChatModel([text("tides follow the moon <b>not bold</b>")])
    agent = Agent(role="Writer", goal="Write about {topic}", llm=model)
    return Ensemble(tasks=[Task(description="Write about {topic}.", agent=agent)])


@pytest.fixture
def driver() -> Iterator[Any]:
    profile = tempfile.mkdtemp(prefix="agentensemble-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    browser = webdriver.Chrome(options=options, service=webdriver.ChromeService(CHROMEDRIVER))
    browser.set_page_load_timeout(WAIT)
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_the_docs_page_submits_a_run_and_shows_its_events(driver: Any) -> None:
    app = run_api({"writer": writer}, token=TOKEN, page=the_docs_page())
    with hardened_serving(app) as port:
        driver.get(f"http://127.0.0.1:{port}/#{TOKEN}")
        driver.find_element(By.ID, "go").click()
        log = driver.find_element(By.ID, "log")
        WebDriverWait(driver, WAIT, poll_frequency=0.05).until(
            lambda d: "RunState succeeded" in log.text, message="the run's end in the page"
        )
        shown = log.text
        assert not driver.find_elements(By.CSS_SELECTOR, "#log b")  # model text stays text
    assert shown.splitlines()[0] == "RunState running"
    assert "TaskStarted" in shown and "TokenDelta" in shown
    assert "EnsembleCompleted tides follow the moon <b>not bold</b>" in shown
