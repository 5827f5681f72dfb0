"""Workflow.PARALLEL through litellm against the local server: real sockets, real concurrency.

The server's responder runs on one handler thread per request, so a ``threading.Barrier`` in it
proves that the requests of independent tasks were in flight at the same time.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from openai_server import Fault, OpenAIServer, Reply, TextReply, ToolCallsReply

from agentensemble import (
    LLM,
    Ensemble,
    RetryPolicy,
    Task,
    TaskExecutionError,
    Workflow,
    tool,
)

pytestmark = pytest.mark.e2e

WAIT = 10.0
FAST = RetryPolicy(max_attempts=2, initial_backoff=0.001, max_backoff=0.01, jitter=0)


def llm_for(server: OpenAIServer) -> LLM:
    return LLM(
        model="openai/test-model",
        api_base=server.base_url,
        api_key="sk-e2e-parallel",
        retry_policy=FAST,
        timeout=WAIT,
    )


def task_of(body: dict[str, Any]) -> str:
    prompt = str(body["messages"][1]["content"])
    return prompt.split("## Task\n", 1)[1].split("\n", 1)[0]


def test_independent_tasks_are_in_flight_at_once_then_the_writer_sees_all(
    openai_server: OpenAIServer,
) -> None:
    researchers = threading.Barrier(3, timeout=WAIT)  # broken (an error) if they came in turn

    def responder(body: dict[str, Any]) -> Reply:
        task = task_of(body)
        if task.startswith("research"):
            researchers.wait()
            return TextReply(f"notes on {task.split()[-1]}")
        return TextReply("the report")

    openai_server.set_responder(responder)
    llm = llm_for(openai_server)
    topics = [Task(description=f"research {t}") for t in ("tides", "moon", "sun")]
    write = Task(description="write the report", context=topics)

    result = Ensemble(tasks=[write, *topics], workflow=Workflow.PARALLEL, llm=llm).run()

    report = result.output_for(write)
    assert report is not None and report.raw == "the report"
    assert result.raw == "notes on sun"  # the last task in list order
    assert [o.raw for o in result.task_outputs[1:]] == [
        "notes on tides",
        "notes on moon",
        "notes on sun",
    ]
    last = openai_server.requests[-1]["messages"][1]["content"]
    assert task_of(openai_server.requests[-1]) == "write the report"
    for notes in ("notes on tides", "notes on moon", "notes on sun"):
        assert notes in last
    assert len(openai_server.requests) == 4


ACTED = threading.Event()


@tool
def launch(target: str) -> str:
    """Launch something irreversible.

    Args:
        target: what to launch
    """
    ACTED.set()
    return f"launched {target}"


def test_fail_fast_abandons_a_request_in_flight_and_its_tool_never_runs(
    openai_server: OpenAIServer,
) -> None:
    ACTED.clear()
    held = threading.Event()  # the launcher's request has reached the server
    release = threading.Event()

    def responder(body: dict[str, Any]) -> Reply:
        if task_of(body) == "launch it":
            held.set()
            release.wait(WAIT)  # answer only after the run is over: the client has gone
            return ToolCallsReply((("launch", '{"target": "rocket"}'),))
        held.wait(WAIT)
        return Fault.http(400, body='{"error": {"message": "bad request", "type": "invalid"}}')

    openai_server.set_responder(responder)
    tasks = [
        Task(description="launch it", tools=[launch]),
        Task(description="check the weather"),
    ]
    ensemble = Ensemble(tasks=tasks, workflow=Workflow.PARALLEL, llm=llm_for(openai_server))

    try:
        with pytest.raises(TaskExecutionError) as info:
            ensemble.run()
    finally:
        release.set()

    assert info.value.task is tasks[1]
    assert info.value.completed_outputs == []
    # the server now answers the abandoned request with a tool call; nobody may act on it
    openai_server.wait_for_requests(2, timeout=WAIT)
    assert not ACTED.wait(0.5)
