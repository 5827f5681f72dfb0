"""What the run page's workflow and memory views read, over the wire and back from the store:
where each task ran, the loop's and graph's conditions, each memory entry with its whole size."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from _web_support import logged_in
from _workflow_runs import INPUTS, workflow_ensemble

from agentensemble import MemoryRetrieved, ToolCallCompleted, ToolCallRecord
from agentensemble_web import WebConsole, WebConsoleServer
from agentensemble_web.wire import MAX_TEXT, event_to_json


def test_a_memory_entry_carries_its_whole_size_when_its_text_is_cut() -> None:
    text = "x" * (MAX_TEXT + 5_000)
    event = MemoryRetrieved(
        agent_role="Helper",
        task_name=None,
        task_description="t",
        query="q",
        scopes=["s"],
        items=[{"source": "memory", "scope": "s", "entry_id": "1", "text": text, "score": 0.5}],
        run_id="run-1",
    )
    (item,) = event_to_json(event)["items"]
    assert item["chars"] == MAX_TEXT + 5_000
    assert len(item["text"]) < MAX_TEXT + 100 and item["text"].endswith("…[truncated]")
    assert (item["scope"], item["entry_id"], item["score"]) == ("s", "1", 0.5)


def test_a_memory_entry_with_a_key_in_it_is_redacted_on_the_wire() -> None:
    key = "sk-live-abcdef1234567890abcdef"
    event = MemoryRetrieved(
        agent_role="Helper",
        task_name=None,
        task_description="t",
        query=f"what is {key}",
        scopes=["s"],
        items=[{"source": "memory", "scope": "s", "entry_id": "1", "text": f"the key: {key}"}],
        run_id="run-1",
    )
    assert key not in str(event_to_json(event))


def test_a_stored_run_keeps_where_its_tasks_ran_and_what_decided(tmp_path: Path) -> None:
    db = tmp_path / "console.sqlite3"
    with WebConsoleServer(port=0, db=db) as console:
        listener = WebConsole(console.url, console.token)
        output = workflow_ensemble(tmp_path / "memory.sqlite", [listener]).run(INPUTS)
        assert listener.flush(20.0)
    with WebConsoleServer(port=0, db=db) as console:  # read back after a restart
        client, _ = logged_in(console)
        try:
            events = client.get(f"/api/runs/{output.run_id}").json()["events"]
        finally:
            client.close()
    within = {e["task_index"]: e["within"] for e in events if e["type"] == "TaskStarted"}
    assert within[1] == [] and within[2] == ["loop:polish:1"] and within[5] == ["loop:polish:2"]
    assert within[10] == ["graph:support:3:answer"] and within[16] == ["ensemble:audit"]
    assert within[14] == ["for_each:summaries:0"]
    loops = [e for e in events if e["type"] == "LoopIterationCompleted"]
    assert [(e["iteration"], e["stopped_by"], e["condition"]) for e in loops] == [
        (1, None, "critic_approves"),
        (2, "until", "critic_approves"),
    ]
    steps = [e for e in events if e["type"] == "GraphStepCompleted"]
    assert [(e["state"], e["next_state"], e["condition"]) for e in steps][2] == (
        "answer",
        "research",
        "research_is_thin",
    )
    (memory,) = [e for e in events if e["type"] == "MemoryRetrieved"]
    assert memory["task_index"] == 1 and memory["scopes"] == ["customer-42"]
    sizes = sorted((item["chars"], len(item["text"])) for item in memory["items"])
    assert sizes[0] == (33, 33) and sizes[1][0] == sizes[1][1] > 1_000  # nothing was cut


def test_a_tool_calls_duration_is_seconds_on_the_wire() -> None:
    # the timeline draws a tool-call mark and notes its duration from a number of seconds;
    # pydantic's JSON dump gave an ISO-8601 text ("PT0.001994S") the page could not read
    record = ToolCallRecord(
        name="lookup", arguments="{}", output="x", is_success=True, duration=timedelta(0, 0.001994)
    )
    event = ToolCallCompleted(agent_role="Helper", task_description="t", record=record)
    sent = event_to_json(event)
    assert sent["record"]["duration"] == 0.001994
    assert sent["record"]["name"] == "lookup" and sent["record"]["return_behavior"] == "to_llm"
