"""The trace viewer shows prompts stored by reference (trace schema 2) as the exact prompts, and
a hostile file's references as notes, within a bound, not as gigabytes of text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_web_browser import _wait, driver  # noqa: F401  (the fixture)

from agentensemble import Agent, Ensemble, Task
from agentensemble.testing import ScriptedChatModel
from agentensemble_web import WebConsoleServer

pytestmark = pytest.mark.browser

WORDS = "plain words of an output " * 40


def _open(driver: Any, console: WebConsoleServer, path: Path) -> list[str]:  # noqa: F811
    from selenium.webdriver.common.by import By

    driver.get(console.login_url)
    driver.get(console.url + "/#/trace")
    _wait(driver, lambda d: d.find_elements(By.ID, "trace-file"), "the trace viewer")
    driver.find_element(By.ID, "trace-file").send_keys(str(path))
    _wait(driver, lambda d: d.find_elements(By.ID, "trace-summary"), "the trace to render")
    texts: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('#timeline .item.prompt pre')]"
        ".map((e) => e.textContent)"
    )
    return texts


def test_the_trace_viewer_shows_prompts_stored_by_reference_exactly(
    driver: Any,  # noqa: F811
    console: WebConsoleServer,
    tmp_path: Path,
) -> None:
    model = ScriptedChatModel([f"output-{n} {WORDS}" for n in range(10)])
    agent = Agent(role="Writer", goal="write")
    tasks: list[Task] = []
    for n in range(10):
        tasks.append(Task(description=f"step {n}", agent=agent, context=list(tasks)))
    trace = Ensemble(tasks=tasks, llm=model).run().trace
    assert trace is not None
    assert sum(task.user_prompt_ref is not None for task in trace.tasks) >= 5
    shown = _open(driver, console, trace.save(tmp_path / "trace.json"))
    assert shown == [
        f"[system] {task.system_prompt}\n\n[user] {task.user_prompt}" for task in trace.tasks
    ]


def test_the_trace_viewer_shows_a_hostile_files_references_as_notes(
    driver: Any,  # noqa: F811
    console: WebConsoleServer,
    tmp_path: Path,
) -> None:
    big = "x" * 1_000_000
    refs = [
        {"user_prompt_ref": {"start_of": n, "length": 1_000_000, "rest": ""}} for n in range(60)
    ]
    tasks = [
        {"user_prompt": big},
        *refs,
        {"user_prompt_ref": {"start_of": 99, "length": 1, "rest": ""}},
        {"user_prompt_ref": {"start_of": 0, "length": 2_000_000, "rest": ""}},
    ]
    trace = {
        "schema_version": 2,
        "run_id": "hostile-run",
        "started_at": "2026-11-28T00:00:00Z",
        "workflow": "sequential",
        "tasks": [
            {"index": i + 1, "agent_role": "a", "description": "d", "system_prompt": "s", **t}
            for i, t in enumerate(tasks)
        ],
    }
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    shown = _open(driver, console, path)
    assert len(shown) == len(tasks)
    assert sum(len(text) for text in shown) < 40 * 1024 * 1024
    assert "not shown" in shown[40]
    assert "not valid" in shown[-1] and "not valid" in shown[-2]
