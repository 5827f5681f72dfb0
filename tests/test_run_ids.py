"""Run identity: one UUID4 per run, on the output, on every event, in every log line of the run
(worker threads and nested tools included) and on the error of a failed run."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agentensemble import Agent, Ensemble, Task, TaskExecutionError, tool
from agentensemble.logging import LOGGER_NAME, get_logger
from agentensemble.run_context import current_run_id
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call


class Events:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def log_records() -> Iterator[Records]:
    logger = logging.getLogger(LOGGER_NAME)
    handler, level = Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


@tool
def shout(text: str) -> str:
    """Shout the text (a sync tool: it runs in a worker thread)."""
    get_logger().info("shouting", seen_run_id=current_run_id())
    return text.upper()


def test_a_run_has_one_uuid4_on_its_output_events_and_log_lines(log_records: Records) -> None:
    model = ScriptedChatModel([tool_call("shout", {"text": "hi"}), "HI"])
    events = Events()
    ensemble = Ensemble(
        tasks=[Task(description="Shout hi", agent=Agent(role="A", goal="g", tools=[shout]))],
        llm=model,
        listeners=[events],
    )

    output = ensemble.run()

    assert uuid.UUID(output.run_id).version == 4
    assert events.events and {e.run_id for e in events.events} == {output.run_id}
    lines = [r for r in log_records.records if r.name == LOGGER_NAME]
    started = [r.getMessage() for r in lines].index("task started")
    lines = lines[started:]  # validation before the run (tool specs) logs no run id
    assert lines and {getattr(r, "run_id", None) for r in lines} == {output.run_id}
    in_tool = [r for r in lines if r.getMessage() == "shouting"]
    assert in_tool and in_tool[0].seen_run_id == output.run_id  # type: ignore[attr-defined]
    assert current_run_id() == ""  # nothing leaks out of the run


def test_every_run_gets_a_fresh_id() -> None:
    model = ScriptedChatModel(["one", "two"])
    ensemble = Ensemble(tasks=[Task(description="Say something")], llm=model)

    assert ensemble.run().run_id != ensemble.run().run_id


def test_a_failed_run_names_its_id_on_the_error() -> None:
    events = Events()
    ensemble = Ensemble(
        tasks=[Task(description="Say something")], llm=ScriptedChatModel([]), listeners=[events]
    )

    with pytest.raises(TaskExecutionError) as caught:
        ensemble.run()

    assert uuid.UUID(caught.value.run_id).version == 4
    assert {e.run_id for e in events.events} == {caught.value.run_id}


@pytest.mark.anyio
async def test_concurrent_runs_of_one_ensemble_never_share_or_swap_ids() -> None:
    """Both runs are inside their sync tools (worker threads) at the same time: the barrier
    proves the overlap; each tool must still see its own run's id."""
    barrier = threading.Barrier(2, timeout=30)
    seen: dict[str, str] = {}

    @tool
    def whoami(tag: str) -> str:
        """Report which run this is."""
        barrier.wait()
        seen[tag] = current_run_id()
        return json.dumps({"tag": tag, "run_id": current_run_id()})

    def answer(messages: list[dict[str, Any]], tools: Any) -> Any:
        last = messages[-1]
        if last["role"] == "tool":
            return str(last["content"])
        tag = str(last["content"]).split("run ")[1].split()[0]
        return tool_call("whoami", {"tag": tag})

    events = Events()
    ensemble = Ensemble(
        tasks=[
            Task(description="Identify run {tag}", agent=Agent(role="A", goal="g", tools=[whoami]))
        ],
        llm=FunctionChatModel(answer),
        listeners=[events],
    )

    first, second = await asyncio.gather(
        ensemble.arun({"tag": "one"}), ensemble.arun({"tag": "two"})
    )

    assert first.run_id != second.run_id
    assert json.loads(first.raw) == {"tag": "one", "run_id": first.run_id}
    assert json.loads(second.raw) == {"tag": "two", "run_id": second.run_id}
    assert seen == {"one": first.run_id, "two": second.run_id}
    by_run = {e.run_id for e in events.events}
    assert by_run == {first.run_id, second.run_id}


def test_a_run_inside_a_tool_gets_its_own_id_and_names_its_parent() -> None:
    inner_outputs: list[Any] = []

    @tool
    async def ask_specialist(question: str) -> str:
        """Ask a nested ensemble."""
        inner = Ensemble(
            tasks=[Task(description=question)], llm=ScriptedChatModel(["specialist answer"])
        )
        output = await inner.arun()
        inner_outputs.append(output)
        return output.raw

    events = Events()
    model = ScriptedChatModel([tool_call("ask_specialist", {"question": "Why?"}), "Because"])
    outer = Ensemble(
        tasks=[
            Task(description="Find out", agent=Agent(role="A", goal="g", tools=[ask_specialist]))
        ],
        llm=model,
        listeners=[events],
    )

    output = outer.run()

    (inner,) = inner_outputs
    assert inner.run_id != output.run_id
    assert inner.trace is not None and inner.trace.parent_run_id == output.run_id
    assert {e.run_id for e in events.events} == {output.run_id}  # the inner run's stay inner
    assert output.trace is not None
    assert [c.output for c in output.trace.tasks[0].tool_calls] == ["specialist answer"]


@pytest.mark.anyio
async def test_a_cancelled_run_ends_with_ensemble_failed_for_its_listeners() -> None:
    from agentensemble import EnsembleFailed

    started = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        """Never returns on its own."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    seen: list[object] = []

    class Recorder:
        def on_event(self, event: object) -> None:
            seen.append(event)

    model = ScriptedChatModel([tool_call("wait_forever", {})])
    agent = Agent(role="Waiter", goal="Wait", tools=[wait_forever], llm=model)
    ensemble = Ensemble(tasks=[Task(description="Wait", agent=agent)], listeners=[Recorder()])
    run = asyncio.ensure_future(ensemble.arun())
    await asyncio.wait_for(started.wait(), timeout=30)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    assert isinstance(seen[-1], EnsembleFailed)
    assert isinstance(seen[-1].error, asyncio.CancelledError)


def test_ids_are_random_uuid4s() -> None:
    from agentensemble.run_context import new_id_hex, new_run_id

    run_ids = {new_run_id() for _ in range(200)}
    call_ids = {new_id_hex() for _ in range(200)}
    assert len(run_ids) == 200 and len(call_ids) == 200
    for run_id in run_ids:
        parsed = uuid.UUID(run_id)
        assert str(parsed) == run_id
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
    for call_id in call_ids:
        parsed = uuid.UUID(call_id)
        assert parsed.hex == call_id
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
