"""A lone surrogate in a dict key (a model's or a tool's output) does not cost the console the
event: the output is sent, its keys cleaned like its text and redacted like it."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from agentensemble import TaskCompleted, TaskOutput
from agentensemble_web import WebConsole
from agentensemble_web.wire import event_to_json, to_json_value

KEY = "sk-live-abcdef1234567890abcdef"


class Plain(BaseModel):  # a user's output type, not one of agentensemble's saveable models
    found: dict[Any, Any]


def _event(parsed: Any) -> TaskCompleted:
    output = TaskOutput(raw="done", parsed=parsed, task_description="t", agent_role="r")
    return TaskCompleted(task_index=1, total_tasks=1, output=output, run_id="run-1")


def test_a_task_output_with_a_surrogate_key_is_sent() -> None:
    data = event_to_json(_event({"k\ud800": 1, f"secret {KEY}": 2}))
    assert data["output"]["parsed"] == {"k\ufffd": 1, "secret ***": 2}
    console = WebConsole("http://127.0.0.1:9", token="t")
    assert console._encode(data) is not None
    assert KEY not in json.dumps(data)


def test_a_plain_model_with_a_surrogate_key_is_sent() -> None:
    # inside a task's output the output cleans it; on its own the wire walks its Python dump
    inside = event_to_json(_event(Plain(found={"k\ud800": {"v": "x \ud800"}})))
    assert inside["output"]["parsed"] == {"found": {"k\ufffd": {"v": "x \ufffd"}}}
    alone = to_json_value(Plain(found={"k\ud800": {"v": f"x {KEY}"}}))
    assert alone == {"found": {"k\ud800": {"v": "x ***"}}}
    assert WebConsole("http://127.0.0.1:9", token="t")._encode({"data": alone}) is not None
