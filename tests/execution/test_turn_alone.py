"""A lone tool call whose loop-side work is all the framework's runs in the turn's own task.

``run_alone`` must keep what ``run_turn`` promises a single call: its result, ``stopped`` set
whenever the call raises or the turn is cancelled (before the error goes on), and the call's
context variables kept out of the run (a sync body runs on a copy in its worker thread; any
other tool still gets a task of its own).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.events import ToolCallCompleted
from agentensemble.execution.tool_turn import run_alone
from agentensemble.testing import ScriptedChatModel, tool_calls

pytestmark = pytest.mark.anyio
MARK: contextvars.ContextVar[str | None] = contextvars.ContextVar("test_turn_alone", default=None)


async def test_run_alone_returns_the_calls_result_and_leaves_stopped_clear() -> None:
    stopped = threading.Event()

    async def call() -> str:
        return "done"

    assert await run_alone(call(), stopped) == "done"
    assert not stopped.is_set()


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
async def test_run_alone_sets_stopped_and_raises_the_calls_own_error(error: BaseException) -> None:
    stopped = threading.Event()

    async def call() -> str:
        raise error

    with pytest.raises(type(error)) as raised:
        await run_alone(call(), stopped)
    assert raised.value is error and stopped.is_set()


async def test_run_alone_sets_stopped_when_the_turn_is_cancelled() -> None:
    stopped = threading.Event()
    started = asyncio.Event()
    seen_stopped_after: list[bool] = []

    async def call() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            seen_stopped_after.append(stopped.is_set())
        return "never"

    turn = asyncio.ensure_future(run_alone(call(), stopped))
    await asyncio.wait_for(started.wait(), 10)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert stopped.is_set() and seen_stopped_after == [False]  # the call had ended first


class _Seen:
    def __init__(self) -> None:
        self.marks: list[str | None] = []

    def on_event(self, event: object) -> None:
        if isinstance(event, ToolCallCompleted):
            self.marks.append(MARK.get())


def _ensemble(fn: object, listener: _Seen) -> Ensemble:
    model = ScriptedChatModel([tool_calls(("mark", {"value": "x"})), "done"])
    agent = Agent(role="R", goal="g", tools=[fn], llm=model)
    return Ensemble(tasks=[Task(description="d", agent=agent)], listeners=[listener])


@tool(name="mark", description="Sets a context variable")
def sync_mark(value: str) -> str:
    MARK.set(value)
    return value


@tool(name="mark", description="Sets a context variable")
async def async_mark(value: str) -> str:
    MARK.set(value)
    return value


@pytest.mark.parametrize("fn", [sync_mark, async_mark], ids=["sync", "async"])
async def test_a_tools_context_variables_stay_in_its_call(fn: object) -> None:
    listener = _Seen()
    output = await _ensemble(fn, listener).arun()
    assert output.raw == "done" and output.task_outputs[0].tool_calls[0].output == "x"
    assert listener.marks == [None]
