"""A tool or handler raising SystemExit, GeneratorExit or a stray CancelledError fails only itself.

Attack: ``argparse`` raises ``SystemExit`` (even with ``exit_on_error=False``); a tool using it
on the model's text, or raising ``GeneratorExit`` or a ``CancelledError`` of its own, escaped
``run()`` and lost every finished output. Now it is that call's failure (the model reads what
was raised) or, for a handler task, the task's failure with every earlier output kept. Only
Ctrl-C and a real cancellation of the run still end it that way.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from agentensemble import (
    AbstractAgentTool,
    Agent,
    AgentTool,
    Ensemble,
    Task,
    TaskExecutionError,
    TaskHandlerContext,
    ToolPipeline,
    ToolResult,
    tool,
)
from agentensemble.testing import ScriptedChatModel, tool_call


class Escape(BaseException):
    """A BaseException of the tool's own."""


def argparse_exit() -> None:
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--count", type=int)
    parser.parse_args(["--unknown"])  # SystemExit(2), whatever exit_on_error says


RAISERS: dict[str, Callable[[], None]] = {
    "SystemExit": lambda: (_ for _ in ()).throw(SystemExit(3)),
    "argparse": argparse_exit,
    "GeneratorExit": lambda: (_ for _ in ()).throw(GeneratorExit()),
    "CancelledError": lambda: (_ for _ in ()).throw(asyncio.CancelledError()),
    "own BaseException": lambda: (_ for _ in ()).throw(Escape("boom")),
}
EXPECTED_NAME = {
    "SystemExit": "SystemExit",
    "argparse": "SystemExit",
    "GeneratorExit": "GeneratorExit",
    "CancelledError": "CancelledError",
    "own BaseException": "Escape",
}


def shapes(raise_: Callable[[], None]) -> dict[str, object]:
    """Every tool shape, each raising with ``raise_`` in its body."""

    class InstrumentedSync(AbstractAgentTool):
        name = "t"
        description = "d"

        def do_execute(self, input: str) -> str:
            raise_()
            return "unreachable"

    class InstrumentedAsync(AbstractAgentTool):
        name = "t"
        description = "d"

        async def ado_execute(self, input: str) -> str:
            raise_()
            return "unreachable"

    class PlainSync(AgentTool):
        name = "t"
        description = "d"

        def execute(self, input: str) -> ToolResult:
            raise_()
            return ToolResult.success("unreachable")

    class PlainAsync(AgentTool):
        name = "t"
        description = "d"

        async def aexecute(self, input: str) -> ToolResult:
            raise_()
            return ToolResult.success("unreachable")

    @tool(name="t")
    def function(input: str) -> str:
        """d"""
        raise_()
        return "unreachable"

    @tool(name="t")
    async def async_function(input: str) -> str:
        """d"""
        raise_()
        return "unreachable"

    def adapter(result: ToolResult) -> str:
        raise_()
        return "unreachable"

    class Echo(AbstractAgentTool):
        name = "echo"
        description = "d"

        def do_execute(self, input: str) -> str:
            return input

    from agentensemble import PipelineStep

    return {
        "AbstractAgentTool sync": InstrumentedSync(),
        "AbstractAgentTool async": InstrumentedAsync(),
        "AgentTool sync": PlainSync(),
        "AgentTool async": PlainAsync(),
        "@tool sync": function,
        "@tool async": async_function,
        "pipeline plain step": ToolPipeline([Echo(), PlainSync()], name="t"),
        "pipeline async step": ToolPipeline([Echo(), InstrumentedAsync()], name="t"),
        "pipeline adapter": ToolPipeline([PipelineStep(Echo(), adapter), Echo()], name="t"),
    }


SHAPE_NAMES = list(shapes(lambda: None))


@pytest.mark.parametrize("shape", SHAPE_NAMES)
@pytest.mark.parametrize("raiser", list(RAISERS))
def test_a_tool_raising_a_base_exception_fails_only_that_call(raiser: str, shape: str) -> None:
    tool_ = shapes(RAISERS[raiser])[shape]
    model = ScriptedChatModel([tool_call("t", {"input": "x"}), "carried on"])
    agent = Agent(role="Worker", goal="Work", tools=[tool_], llm=model)
    first = Task(description="First", handler=lambda ctx: "kept")
    output = Ensemble(tasks=[first, Task(description="Second", agent=agent)]).run()
    assert [o.raw for o in output.task_outputs] == ["kept", "carried on"]
    (record,) = output.task_outputs[1].tool_calls
    assert not record.is_success
    assert f"raised {EXPECTED_NAME[raiser]}" in record.output
    assert record.output in model.requests[1].tool_results[0]


def _sync_handler(raise_: Callable[[], None]) -> Callable[[TaskHandlerContext], Any]:
    def handler(ctx: TaskHandlerContext) -> str:
        raise_()
        return "unreachable"

    return handler


def _async_handler(raise_: Callable[[], None]) -> Callable[[TaskHandlerContext], Any]:
    async def handler(ctx: TaskHandlerContext) -> str:
        raise_()
        return "unreachable"

    return handler


@pytest.mark.parametrize("make", [_sync_handler, _async_handler], ids=["sync", "async"])
@pytest.mark.parametrize("raiser", list(RAISERS))
def test_a_handler_raising_a_base_exception_fails_its_task_and_keeps_earlier_outputs(
    raiser: str, make: Callable[[Callable[[], None]], Any]
) -> None:
    first = Task(description="First", handler=lambda ctx: "kept")
    second = Task(description="Second", handler=make(RAISERS[raiser]))
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[first, second]).run()
    assert caught.value.task is second
    assert [o.raw for o in caught.value.completed_outputs] == ["kept"]
    assert type(caught.value.__cause__).__name__ == EXPECTED_NAME[raiser]
    assert EXPECTED_NAME[raiser] in str(caught.value)


def test_ctrl_c_raised_inside_a_tool_still_ends_the_run() -> None:
    class Interrupted(AbstractAgentTool):
        name = "t"
        description = "d"

        async def ado_execute(self, input: str) -> str:
            raise KeyboardInterrupt

    model = ScriptedChatModel([tool_call("t", {"input": "x"}), "never"])
    agent = Agent(role="Worker", goal="Work", tools=[Interrupted()], llm=model)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(Ensemble(tasks=[Task(description="Go", agent=agent)]).arun())


@pytest.mark.anyio
async def test_a_real_cancellation_of_the_run_still_cancels_it() -> None:
    started = asyncio.Event()

    class Slow(AbstractAgentTool):
        name = "t"
        description = "d"

        async def ado_execute(self, input: str) -> str:
            started.set()
            await asyncio.Event().wait()
            return "unreachable"

    model = ScriptedChatModel([tool_call("t", {"input": "x"}), "never"])
    agent = Agent(role="Worker", goal="Work", tools=[Slow()], llm=model)
    run = asyncio.ensure_future(Ensemble(tasks=[Task(description="Go", agent=agent)]).arun())
    await asyncio.wait_for(started.wait(), 10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, 10)


@pytest.mark.parametrize("make", [_sync_handler, _async_handler], ids=["sync", "async"])
@pytest.mark.parametrize("raiser", list(RAISERS))
def test_in_a_parallel_run_a_base_exception_fails_only_its_task(
    raiser: str, make: Callable[[Callable[[], None]], Any]
) -> None:
    from agentensemble import ParallelErrorStrategy, ParallelExecutionError, Workflow

    fine = Task(description="Fine", handler=lambda ctx: "kept")
    bad = Task(description="Bad", handler=make(RAISERS[raiser]))
    ensemble = Ensemble(
        tasks=[fine, bad],
        workflow=Workflow.PARALLEL,
        parallel_error_strategy=ParallelErrorStrategy.CONTINUE_ON_ERROR,
    )
    with pytest.raises(ParallelExecutionError) as caught:
        ensemble.run()
    assert [o.raw for o in caught.value.completed_outputs] == ["kept"]
    assert type(caught.value.failures[bad]).__name__ == EXPECTED_NAME[raiser]


@pytest.mark.parametrize("raiser", list(RAISERS))
def test_a_listener_raising_a_base_exception_never_breaks_the_run(raiser: str) -> None:
    class Listener:
        def on_event(self, event: object) -> None:
            RAISERS[raiser]()

    first = Task(description="First", handler=lambda ctx: "kept")
    output = Ensemble(tasks=[first], listeners=[Listener()]).run()
    assert output.raw == "kept"


# -- a tool raising KeyboardInterrupt stops the run as Ctrl-C does ----------------------------

BOUND = 30.0  # a bound on a hang (the run() caller used to wait forever), not a speed target


@tool
def interrupting_sync() -> str:
    """Raises Ctrl-C from a sync body (in a worker thread)."""
    raise KeyboardInterrupt


@tool
async def interrupting_async() -> str:
    """Raises Ctrl-C from an async body (on the run's loop)."""
    raise KeyboardInterrupt


def _two_tasks(tool_name: str, workflow: str = "sequential") -> Ensemble:
    model = ScriptedChatModel(["first done", tool_call(tool_name), "never"])
    agent = Agent(
        role="Worker", goal="Work", tools=[interrupting_sync, interrupting_async], llm=model
    )
    first = Task(description="one", agent=agent)
    second = Task(description="two", agent=agent, context=[first])
    return Ensemble(tasks=[first, second], workflow=workflow)


def _bounded(call: Callable[[], Any]) -> BaseException:
    caught: list[BaseException] = []

    def target() -> None:
        try:
            call()
        except BaseException as exc:
            caught.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(BOUND)
    assert caught, f"the run neither stopped nor raised within {BOUND} s"
    return caught[0]


@pytest.mark.parametrize("tool_name", ["interrupting_sync", "interrupting_async"])
@pytest.mark.parametrize("workflow", ["sequential", "parallel"])
@pytest.mark.parametrize("entry", ["run", "arun"])
def test_a_tool_raising_keyboard_interrupt_stops_the_run_keeping_completed_outputs(
    tool_name: str, workflow: str, entry: str
) -> None:
    ensemble = _two_tasks(tool_name, workflow)
    if entry == "run":
        stop = _bounded(ensemble.run)
    else:
        stop = _bounded(lambda: asyncio.run(ensemble.arun()))

    assert isinstance(stop, KeyboardInterrupt)
    assert [o.raw for o in stop.completed_outputs] == ["first done"]  # type: ignore[attr-defined]


def test_after_a_tool_s_keyboard_interrupt_the_next_run_works() -> None:
    _bounded(_two_tasks("interrupting_sync").run)
    model = ScriptedChatModel(["fine"])
    agent = Agent(role="Worker", goal="Work", llm=model)
    assert Ensemble(tasks=[Task(description="again", agent=agent)]).run().raw == "fine"
