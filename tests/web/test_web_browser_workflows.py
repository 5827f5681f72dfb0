"""Iterative workflows and memory on the run page, in headless Chromium: a loop's iterations, a
graph's path, a fan-out's items and a nested ensemble as groups of the timeline and rows of the
time chart; what memory retrieved, under its task. Hostile names, conditions and memory texts
stay text; runs stored before tasks said where they ran still render. Screenshots as in
test_web_browser (docs/images/ with AGENTENSEMBLE_WRITE_SCREENSHOTS=1)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from _web_support import api_client
from _workflow_runs import INPUTS, workflow_ensemble
from test_web_browser import IMAGES, WAIT, _wait, driver

from agentensemble_web import WebConsole, WebConsoleServer

pytestmark = pytest.mark.browser
__all__ = ["driver"]  # the module's Chromium, shared by these tests

from selenium.webdriver.common.by import By  # noqa: E402

HOSTILE = '<img src=x id=pwned onerror="document.title=1">\u202eevil'


def _groups(driver: Any, kind: str) -> list[Any]:
    return list(driver.find_elements(By.CSS_SELECTOR, f"#timeline details.group-{kind}"))


def _head(group: Any) -> str:
    return str(group.find_element(By.CSS_SELECTOR, ":scope > summary").text)


def _read(driver: Any, read: Any) -> Any:
    """What ``read`` finds on the page, read again if a re-render replaced an element it found
    (the page renders again as a stored run's events load): no assertion on a stale element.
    An element missing for a moment (an ``IndexError``) is looked for again too."""

    def settled(d: Any) -> tuple[Any] | None:
        try:
            return (read(d),)
        except IndexError:
            return None

    return _wait(driver, settled, "the page to settle")[0]


def _tasks(group: Any) -> list[str]:
    found = group.find_elements(By.CSS_SELECTOR, "section.task")
    return [t.get_attribute("data-task") for t in found]


def _open_run(driver: Any, console: WebConsoleServer, run_id: str) -> None:
    driver.get(console.login_url)
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#live.on"), "the live stream")
    driver.get(f"{console.url}/#/run/{run_id}")


def test_a_real_run_shows_its_loop_graph_fan_out_nested_ensemble_and_memory(
    driver: Any, console: WebConsoleServer, tmp_path: Path
) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    listener = WebConsole(console.url, console.token)
    output = workflow_ensemble(tmp_path / "memory.sqlite", [listener]).run(INPUTS)
    assert listener.flush(WAIT)
    _open_run(driver, console, output.run_id)
    _wait(driver, lambda d: len(_groups(d, "graph-member")) == 5, "the graph's five steps")

    # the loop: its iterations, each with its tasks, how long it took and what its until said
    (loop,) = _groups(driver, "loop")
    assert _head(loop).startswith("Loop · polish · 2 iterations · stopped: until critic_approves")
    assert _head(loop).endswith("held after iteration 2")
    first, second = _groups(driver, "loop-member")
    assert (first.get_attribute("data-number"), second.get_attribute("data-number")) == ("1", "2")
    assert _tasks(first) == ["2", "3"] and _tasks(second) == ["4", "5"]
    assert "until critic_approves did not hold: again" in _head(first)
    assert "until critic_approves held: the loop ends" in _head(second)
    assert second.get_attribute("data-stopped-by") == "until"
    for iteration in (first, second):
        assert " ms" in _head(iteration) or " s" in _head(iteration)  # its duration

    # the graph: the path of states, the edge and condition chosen after each step
    (graph,) = _groups(driver, "graph")
    path = "triage → research → answer → research → answer → END"
    assert _head(graph) == f"Graph · support · 5 steps · path: {path}"
    steps = [_head(step) for step in _groups(driver, "graph-member")]
    assert steps[0].startswith("Step 1 · triage → research (edge without condition)")
    assert steps[2].startswith("Step 3 · answer → research (when research_is_thin held)")
    assert steps[4].startswith("Step 5 · answer → END (edge without condition)")
    assert [_tasks(s) for s in _groups(driver, "graph-member")] == [
        ["8"],
        ["9"],
        ["10"],
        ["11"],
        ["12"],
    ]

    # the fan-out's items and the nested ensemble hold their own tasks
    (fan_out,) = _groups(driver, "for_each")
    assert _head(fan_out).startswith("Fan-out · summaries · 2 items")
    assert [_head(i) for i in _groups(driver, "for_each-member")] == ["Item 1", "Item 2"]
    assert _tasks(fan_out) == ["14", "15"]
    (nested,) = _groups(driver, "ensemble")
    assert _head(nested).startswith("Nested ensemble · audit") and _tasks(nested) == ["16"]

    # the time chart: a row per group, before its tasks, indented under its parent
    labels = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#gantt .gantt-label")]
    start = labels.index("Loop · polish")
    assert labels[start : start + 7] == [
        "Loop · polish",
        "Iteration 1",
        "Task 2 · Helper",
        "Task 3 · Critic",
        "Iteration 2",
        "Task 4 · Helper",
        "Task 5 · Critic",
    ]
    assert "Graph · support" in labels and "Step 3 · answer" in labels
    assert len(driver.find_elements(By.CSS_SELECTOR, "#gantt .group-bar")) == 13
    driver.save_screenshot(str(IMAGES / "web-console-workflow-chart.png"))
    driver.execute_script("arguments[0].scrollIntoView()", loop)
    driver.save_screenshot(str(IMAGES / "web-console-loop.png"))
    driver.execute_script("arguments[0].scrollIntoView()", graph)
    driver.save_screenshot(str(IMAGES / "web-console-graph.png"))

    # memory: under the task that read it, the scope, the counts and sizes, each entry's text;
    # the long entry is folded to its start
    task = driver.find_element(By.CSS_SELECTOR, '#timeline section.task[data-task="1"]')
    memory = task.find_element(By.CSS_SELECTOR, ".item.memory")
    assert memory.find_element(By.CSS_SELECTOR, ".label").text.startswith(
        "MEMORY RETRIEVED · 2 ENTRIES · 1.5K CHARS"
    )
    assert memory.find_element(By.CSS_SELECTOR, ".scopes").text == "scopes: customer-42"
    entries = memory.find_elements(By.CSS_SELECTOR, "li.memory-entry")
    assert len(entries) == 2
    facts = [e.find_element(By.CSS_SELECTOR, ".entry-facts").text for e in entries]
    assert any("1.5k chars" in f for f in facts) and any("33 chars" in f for f in facts)
    assert "Customer 42 ordered a blue kettle" in memory.text
    long_entry = next(e for e in entries if "1.5k chars" in e.text)
    folded = long_entry.find_element(By.CSS_SELECTOR, "details.entry-text")
    assert folded.get_attribute("open") is None
    assert long_entry.find_element(By.CSS_SELECTOR, "summary").text.endswith(
        "… (show all 1.5k chars)"
    )
    driver.execute_script("arguments[0].scrollIntoView()", task)
    driver.save_screenshot(str(IMAGES / "web-console-memory.png"))
    long_entry.find_element(By.CSS_SELECTOR, "summary").click()
    full = long_entry.find_element(By.CSS_SELECTOR, "details.entry-text pre")
    _wait(driver, lambda d: full.is_displayed(), "the whole entry, unfolded")
    assert full.text.count("ordered a kettle") > 20

    # a folded iteration stays folded while the page re-renders
    loop_head = first.find_element(By.CSS_SELECTOR, ":scope > summary")
    driver.execute_script("arguments[0].scrollIntoView()", loop_head)
    loop_head.click()
    with api_client(console) as api:  # any event of this run re-renders the page
        api.post("/api/events", json={"events": [{"type": "Note", "run_id": output.run_id}]})
    _wait(
        driver,
        lambda d: "NOTE" in d.find_element(By.ID, "timeline").text,
        "the page to re-render",
    )
    (first, _) = _groups(driver, "loop-member")
    assert first.get_attribute("open") is None and _groups(driver, "loop")[0].get_attribute("open")

    # the saved trace shows the same loop and graph in the trace viewer, and the memory
    assert output.trace is not None
    saved = output.trace.save(tmp_path / "trace.json")
    driver.get(console.url + "/#/trace")
    _wait(driver, lambda d: d.find_elements(By.ID, "trace-file"), "the trace viewer")
    driver.find_element(By.ID, "trace-file").send_keys(str(saved))
    _wait(driver, lambda d: len(_groups(d, "loop-member")) == 2, "the loop in the trace")
    assert _head(_groups(driver, "graph")[0]).endswith(path)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#timeline .item.memory")) == 1


def _hostile_run(run_id: str) -> list[dict[str, Any]]:
    t0 = time.time() - 30
    task = {"run_id": run_id, "task_index": 1, "total_tasks": 2, "agent_role": HOSTILE}
    within = [f"loop:{HOSTILE}:1"]
    entry = {
        "source": "memory",
        "scope": HOSTILE,
        "entry_id": HOSTILE,
        "text": HOSTILE + " " + "<script>document.title=2</script>" * 30,
        "score": 0.5,
        "metadata": {HOSTILE: HOSTILE},
        "chars": 60_000,
    }
    return [
        {"type": "EnsembleStarted", "run_id": run_id, "total_tasks": 2, "ts": t0},
        dict(task, type="TaskStarted", ts=t0, task_description=HOSTILE, within=within),
        {
            "type": "MemoryRetrieved",
            "run_id": run_id,
            "task_index": 1,
            "ts": t0 + 0.1,
            "agent_role": HOSTILE,
            "query": HOSTILE,
            "scopes": [HOSTILE],
            "items": [entry],
            "session": HOSTILE,
            "history_messages": 2,
        },
        dict(task, type="TaskCompleted", ts=t0 + 1, output={"raw": "ok"}),
        {
            "type": "LoopIterationCompleted",
            "run_id": run_id,
            "ts": t0 + 1,
            "loop_name": HOSTILE,
            "iteration": 1,
            "task_indices": [1],
            "stopped_by": "until",
            "within": [],
            "condition": HOSTILE,
        },
        {
            "type": "TaskStarted",
            "run_id": run_id,
            "ts": t0 + 1,
            "task_index": 2,
            "total_tasks": 2,
            "task_description": "route",
            "agent_role": "Router",
            "within": [f"graph:{HOSTILE}:1:{HOSTILE}"],
        },
        {
            "type": "GraphStepCompleted",
            "run_id": run_id,
            "ts": t0 + 2,
            "graph_name": HOSTILE,
            "step": 1,
            "state": HOSTILE,
            "next_state": HOSTILE,
            "task_indices": [2],
            "within": [],
            "condition": HOSTILE,
        },
    ]


def test_hostile_loop_names_conditions_and_memory_entries_are_shown_as_text(
    driver: Any, console: WebConsoleServer
) -> None:
    with api_client(console) as api:
        api.post("/api/events", json={"events": _hostile_run("run-hostile-loop")})
    _open_run(driver, console, "run-hostile-loop")
    memory = _wait(
        driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline .item.memory"), "memory"
    )[0]
    (loop,) = _groups(driver, "loop")
    assert "<img src=x" in _head(loop) and "\\u202eevil" in _head(loop)
    condition = loop.find_element(By.CSS_SELECTOR, "summary code.condition").text
    assert condition.startswith("<img src=x id=pwned")
    (step,) = _groups(driver, "graph-member")
    assert _head(step).count("<img src=x") == 3  # the state, the next state, the edge's when
    assert "<script>document.title=2</script>" in memory.text
    assert "\u202e" not in driver.find_element(By.ID, "timeline").text
    assert "only the first" in memory.text and "60k chars reached the console" in memory.text
    for entry in memory.find_elements(By.CSS_SELECTOR, "details.entry-text summary"):
        entry.click()
    # the loop, the graph, its step and the first task's agent, in the time chart
    assert driver.find_element(By.CSS_SELECTOR, "#gantt").text.count("<img src=x") == 4
    # nothing became markup: no image, no script ran, no element from the hostile text
    assert not driver.find_elements(By.ID, "pwned")
    assert not driver.find_elements(By.CSS_SELECTOR, "#timeline script, #timeline img")
    assert driver.title not in ("1", "2")


def test_runs_stored_before_tasks_said_where_they_ran_still_render(
    driver: Any, tmp_path: Path
) -> None:
    """An older stored run: tasks without ``within``, loop events without a condition (grouped
    by their task indices), and an iteration event with no task indices at all (shown as is)."""
    db = tmp_path / "console.sqlite3"
    t0 = time.time() - 60
    events: list[dict[str, Any]] = [{"type": "EnsembleStarted", "run_id": "old", "total_tasks": 3}]
    for index in (1, 2, 3):
        events += [
            {
                "type": "TaskStarted",
                "run_id": "old",
                "ts": t0 + index,
                "task_index": index,
                "total_tasks": 3,
                "task_description": f"Draft {index}",
                "agent_role": "Writer",
            },
            {
                "type": "TaskCompleted",
                "run_id": "old",
                "ts": t0 + index + 0.5,
                "task_index": index,
                "total_tasks": 3,
                "output": {"raw": f"draft {index}"},
            },
        ]
        if index < 3:
            events.append(
                {
                    "type": "LoopIterationCompleted",
                    "run_id": "old",
                    "ts": t0 + index + 0.6,
                    "loop_name": "drafts",
                    "iteration": index,
                    "task_indices": [index],
                    "stopped_by": "max_iterations" if index == 2 else None,
                }
            )
    events.append(
        {"type": "LoopIterationCompleted", "run_id": "old", "loop_name": "gone", "iteration": 7}
    )
    with WebConsoleServer(port=0, db=db) as console, api_client(console) as api:
        api.post("/api/events", json={"events": events})
    with WebConsoleServer(port=0, db=db) as console:  # read back from the store
        _open_run(driver, console, "old")
        _wait(driver, lambda d: _groups(d, "loop"), "the loop")
        heads = _read(driver, lambda d: [_head(g) for g in _groups(d, "loop")])
        assert heads == ["Loop · drafts · 2 iterations · stopped: max_iterations reached (2)"]
        members = _read(driver, lambda d: [_tasks(i) for i in _groups(d, "loop-member")])
        assert members == [["1"], ["2"]]
        second = _read(driver, lambda d: _head(_groups(d, "loop-member")[1]))
        assert "Iteration 2 · 600 ms · last: max_iterations reached" in second
        top = _read(
            driver,
            lambda d: [
                (t.get_attribute("data-task"), t.text)
                for t in d.find_elements(By.CSS_SELECTOR, "#timeline > section.task")
            ],
        )
        assert [task for task, _ in top] == ["3", "0"]
        assert "LOOP ITERATION COMPLETED" in top[1][1] and '"loop_name": "gone"' in top[1][1]


def test_a_loop_whose_run_failed_says_where_it_ended(
    driver: Any, console: WebConsoleServer
) -> None:
    from agentensemble import Ensemble, Loop, Task, TaskExecutionError

    calls: list[int] = []

    def flaky(ctx: Any) -> str:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the second try broke")
        return "fine"

    listener = WebConsole(console.url, console.token)
    loop = Loop(name="retry", body=[Task(name="t", description="Try", handler=flaky)])
    with pytest.raises(TaskExecutionError) as failed:
        Ensemble(tasks=[loop], listeners=[listener]).run()
    assert listener.flush(WAIT)
    _open_run(driver, console, failed.value.run_id)
    _wait(driver, lambda d: len(_groups(d, "loop-member")) == 2, "both iterations")
    heads = _read(driver, lambda d: [_head(g) for g in _groups(d, "loop")])
    assert heads == ["Loop · retry · 2 iterations · ended in iteration 2 (the run stopped there)"]
    head, text = _read(
        driver, lambda d: (_head(_groups(d, "loop-member")[1]), _groups(d, "loop-member")[1].text)
    )
    assert head == "Iteration 2 · did not finish"
    assert "the second try broke" in text


def test_a_running_loop_and_graph_say_where_they_are(
    driver: Any, console: WebConsoleServer
) -> None:
    t0 = time.time() - 5

    def started(index: int, within: list[str]) -> dict[str, Any]:
        return {
            "type": "TaskStarted",
            "run_id": "live",
            "ts": t0 + index,
            "task_index": index,
            "total_tasks": 9,
            "task_description": f"Step {index}",
            "agent_role": "Writer",
            "within": within,
        }

    events = [
        {"type": "EnsembleStarted", "run_id": "live", "total_tasks": 9, "ts": t0},
        started(1, ["loop:drafts:1"]),
        {"type": "TaskCompleted", "run_id": "live", "ts": t0 + 1.5, "task_index": 1},
        {
            "type": "LoopIterationCompleted",
            "run_id": "live",
            "ts": t0 + 1.6,
            "loop_name": "drafts",
            "iteration": 1,
            "task_indices": [1],
            "stopped_by": None,
            "within": [],
            "condition": "good_enough",
        },
        started(2, ["loop:drafts:2", "graph:desk:1:triage"]),
    ]
    with api_client(console) as api:
        api.post("/api/events", json={"events": events})
    _open_run(driver, console, "live")
    loop = _wait(driver, lambda d: _groups(d, "loop"), "the running loop")[0]
    assert _head(loop) == "Loop · drafts · 2 iterations · running (iteration 2)"
    assert _head(_groups(driver, "loop-member")[1]) == "Iteration 2 · running"
    (graph,) = _groups(driver, "graph")  # nested in the second iteration
    assert _head(graph) == "Graph · desk · 1 step · path: triage → …"
    assert _head(_groups(driver, "graph-member")[0]) == "Step 1 · triage · running"
    assert _tasks(_groups(driver, "loop-member")[1]) == ["2"]
