"""``Ensemble.astream``: the run's events as they happen, model text token by token (offline,
on the scripted models), the failure raised after its events, and an early exit that cancels
the run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentensemble import (
    Agent,
    Ensemble,
    EnsembleCompleted,
    EnsembleFailed,
    EnsembleStarted,
    LLMCallCompleted,
    Task,
    TaskCompleted,
    TaskExecutionError,
    TaskFailed,
    TaskStarted,
    TokenDelta,
    tool,
)
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call

pytestmark = pytest.mark.anyio


@tool
def lookup(city: str) -> str:
    """Weather of a city."""
    return f"Sunny in {city}"


def weather(model: Any) -> Ensemble:
    agent = Agent(role="Forecaster", goal="Forecast", tools=[lookup])
    return Ensemble(
        tasks=[Task(description="Forecast {city}", agent=agent, name="forecast")], llm=model
    )


def script() -> ScriptedChatModel:
    return ScriptedChatModel([tool_call("lookup", {"city": "Oslo"}), "It is sunny in Oslo today"])


async def test_events_arrive_in_order_with_the_answer_token_by_token() -> None:
    events = [event async for event in weather(script()).astream({"city": "Oslo"})]

    assert isinstance(events[0], EnsembleStarted) and isinstance(events[-1], EnsembleCompleted)
    deltas = [e for e in events if isinstance(e, TokenDelta)]
    assert "".join(d.text for d in deltas) == "It is sunny in Oslo today"
    assert len(deltas) == 6  # word by word
    output = events[-1].output
    assert {(d.run_id, d.agent_role, d.task_name) for d in deltas} == {
        (output.run_id, "Forecaster", "forecast")
    }
    kinds = [type(e) for e in events]
    assert kinds.index(TaskStarted) < kinds.index(TokenDelta) < kinds.index(TaskCompleted)
    last_call = max(i for i, e in enumerate(events) if isinstance(e, LLMCallCompleted))
    assert all(i < last_call for i, e in enumerate(events) if isinstance(e, TokenDelta))


async def test_streaming_changes_nothing_else() -> None:
    streamed = [e async for e in weather(script()).astream({"city": "Oslo"})][-1].output
    plain = await weather(script()).arun({"city": "Oslo"})

    assert streamed.raw == plain.raw
    assert streamed.usage == plain.usage
    calls = [(c.name, c.arguments, c.output) for c in streamed.task_outputs[0].tool_calls]
    assert calls == [(c.name, c.arguments, c.output) for c in plain.task_outputs[0].tool_calls]
    assert streamed.trace is not None and plain.trace is not None
    one, two = streamed.trace.tasks[0], plain.trace.tasks[0]
    assert (one.system_prompt, one.user_prompt, one.output) == (
        two.system_prompt,
        two.user_prompt,
        two.output,
    )
    assert [t.content for t in one.model_turns] == [t.content for t in two.model_turns]


async def test_a_failure_raises_from_the_iterator_after_the_events_that_led_to_it() -> None:
    ensemble = Ensemble(
        tasks=[Task(description="One"), Task(description="Two")],
        llm=ScriptedChatModel(["first"]),  # nothing left for task two
    )
    seen: list[Any] = []

    with pytest.raises(TaskExecutionError) as caught:
        async for event in ensemble.astream():
            seen.append(event)

    assert [type(e) for e in seen if not isinstance(e, TokenDelta)][-2:] == [
        TaskFailed,
        EnsembleFailed,
    ]
    assert any(isinstance(e, TaskCompleted) for e in seen)
    assert caught.value.trace is not None


async def test_breaking_out_of_the_loop_cancels_the_run() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        if "Two" not in str(messages[-1]["content"]):
            return "first"
        started.set()
        try:
            await asyncio.Event().wait()  # the second task would never finish on its own
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "unreachable"

    ensemble = Ensemble(
        tasks=[Task(description="One"), Task(description="Two")], llm=FunctionChatModel(answer)
    )
    stream = ensemble.astream()
    async for event in stream:
        if isinstance(event, TaskStarted) and event.task_index == 2:
            await asyncio.wait_for(started.wait(), 10)
            break
    await stream.aclose()  # type: ignore[attr-defined]

    await asyncio.wait_for(cancelled.wait(), 10)
    runs = [t for t in asyncio.all_tasks() if "_execute" in repr(t.get_coro())]
    assert runs == []  # the run's task is over, not left running


async def test_a_plain_break_cancels_the_run_once_the_iterator_is_let_go() -> None:
    """No aclose(): Python finalizes the abandoned iterator, which cancels the run."""
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "unreachable"

    ensemble = Ensemble(tasks=[Task(description="Wait")], llm=FunctionChatModel(answer))
    async for event in ensemble.astream():
        if isinstance(event, TaskStarted):
            await asyncio.wait_for(started.wait(), 10)
            break

    await asyncio.wait_for(cancelled.wait(), 10)
