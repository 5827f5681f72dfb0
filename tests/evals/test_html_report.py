"""The HTML report: self-contained, escaped, and read in a real headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from _support import geo_ensemble

from agentensemble import Agent, Ensemble, Task
from agentensemble.evals import Case, Contains, Dataset, EvalReport, Trajectory, evaluate
from agentensemble.testing import FunctionChatModel

HOSTILE = (
    "<script>document.title='pwned'</script>"
    "<img src=x onerror=\"document.title='pwned'\">"
    '<a href="https://evil.example/">click</a>'
)
# a screenshot of the page is taken on every run; AGENTENSEMBLE_WRITE_SCREENSHOTS=1 refreshes the
# one in docs/images/ (shown in docs/evals.md), otherwise it goes to a temporary folder
SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "images"
    if os.environ.get("AGENTENSEMBLE_WRITE_SCREENSHOTS") == "1"
    else Path(tempfile.mkdtemp(prefix="agentensemble-screenshots-"))
)

DATASET = Dataset(
    name="capitals",
    evaluators=[Trajectory(["capital_of"])],
    cases=[
        Case(name="france", inputs={"country": "France"}, evaluators=[Contains("Paris")]),
        Case(name="germany", inputs={"country": "Germany"}, evaluators=[Contains("Berlin")]),
    ],
)


def hostile_ensemble() -> Ensemble:
    def answer(messages: Sequence[Any], tools: Any) -> str:
        return HOSTILE

    agent = Agent(role="<b>Role</b>", goal="g", llm=FunctionChatModel(answer))
    return Ensemble(tasks=[Task(description="Say {x}", expected_output="t", agent=agent)])


def reports() -> tuple[EvalReport, EvalReport]:
    baseline = evaluate(geo_ensemble, DATASET, repeat=2)
    current = evaluate(lambda: geo_ensemble(wrong=True), DATASET, repeat=2)
    return baseline, current


def test_the_page_is_self_contained_and_escapes_everything() -> None:
    dataset = Dataset(
        name="<i>evil</i>",
        cases=[Case(name='"><script>alert(1)</script>', inputs={"x": HOSTILE}, expected=HOSTILE)],
    )
    page = evaluate(hostile_ensemble, dataset).to_html()
    assert "<script" not in page.lower()
    assert "<img" not in page.lower() and "<a " not in page.lower()
    assert "&lt;script&gt;" in page
    assert 'http-equiv="Content-Security-Policy"' in page and "default-src 'none'" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing to fetch
    assert "@import" not in page and "url(" not in page


def test_long_answers_are_cut() -> None:
    def long_answer(messages: Sequence[Any], tools: Any) -> str:
        return "x" * 50_000

    agent = Agent(role="A", goal="g", llm=FunctionChatModel(long_answer))
    ensemble = Ensemble(tasks=[Task(description="d", expected_output="t", agent=agent)])
    page = evaluate(ensemble, Dataset(name="d", cases=[Case(name="c")])).to_html()
    assert "x" * 4_000 in page and "x" * 4_001 not in page and "46000 more characters" in page


# the web console's browser finder: the same binaries (AGENTENSEMBLE_CHROMIUM, ...), the same
# one-line skip, and a missing browser fails under AGENTENSEMBLE_REQUIRE_BROWSER=1 (CI)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from _browser import find_browser  # noqa: E402

BROWSER = find_browser()
webdriver: Any = None
if not isinstance(BROWSER, str):
    CHROMIUM, CHROMEDRIVER = BROWSER
    from selenium import webdriver  # a dev dependency


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if isinstance(BROWSER, str):
        pytest.skip(BROWSER)
    profile = tempfile.mkdtemp(prefix="agentensemble-evals-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(CHROMEDRIVER))
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.browser
def test_a_person_sees_pass_fail_trajectories_and_the_diff_in_the_browser(
    browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    baseline, current = reports()
    page = tmp_path / "report.html"
    current.save_html(page, baseline=baseline)
    browser.get(page.as_uri())
    assert browser.title == "Evaluation capitals: FAILED"
    assert browser.find_element(By.ID, "verdict").text == "FAILED"
    assert len(browser.find_elements(By.CSS_SELECTOR, ".grid .cell.fail")) == 2
    baseline_section = browser.find_element(By.ID, "baseline")
    assert "Against the baseline: 2 regression(s)" in baseline_section.text
    assert "france" in baseline_section.text and "runs passed: 2/2 -> 0/2" in baseline_section.text
    assert "pass rate 100% → 0%" in baseline_section.text
    assert "Contains runs passed: 100% -> 0%" in baseline_section.text
    france = browser.find_element(By.CSS_SELECTOR, 'details.case[data-case="france"]')
    assert france.get_attribute("open") is not None  # failing cases are open
    assert "regressed" in france.find_element(By.TAG_NAME, "summary").text
    steps = france.find_elements(By.CSS_SELECTOR, "ol.trajectory li")
    assert len(steps) == 2  # one per run
    assert steps[0].text.splitlines() == ["Geographer → answer", "capital_of"]
    assert "'Paris' not found" in france.text
    browser.save_screenshot(str(SCREENSHOTS / "eval-report.png"))


@pytest.mark.browser
def test_hostile_model_output_is_shown_as_text_in_the_browser(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    dataset = Dataset(
        name="hostile", cases=[Case(name="c", inputs={"x": 1}, evaluators=[Contains("no")])]
    )
    page = tmp_path / "hostile.html"
    evaluate(hostile_ensemble, dataset).save_html(page)
    browser.get(page.as_uri())
    assert browser.title == "Evaluation hostile: FAILED"  # the script did not run
    answers = [p.text for p in browser.find_elements(By.TAG_NAME, "pre")]
    assert HOSTILE in answers
    assert browser.find_elements(By.CSS_SELECTOR, "main img, main a, main script") == []
    assert "<b>Role</b>" in browser.find_element(By.CSS_SELECTOR, "ol.trajectory").text
