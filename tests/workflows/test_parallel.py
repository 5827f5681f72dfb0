"""Workflow.PARALLEL: the context graph decides the order; concurrency is proven by barriers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import (
    Agent,
    ChatResponse,
    Ensemble,
    ExitReason,
    ParallelErrorStrategy,
    ParallelExecutionError,
    Task,
    TaskExecutionError,
    TaskHandlerContext,
    Workflow,
    tool,
)
from agentensemble.testing import FunctionChatModel, tool_call

pytestmark = pytest.mark.anyio

WAIT = 10.0  # seconds: a bound on waits that normally end at once
Step = Callable[[list[dict[str, Any]]], Awaitable[ChatResponse | str]]


class Meeting:
    """An asyncio barrier that works on Python 3.10 too: ``wait`` returns once ``parties``
    callers are waiting at the same time."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.everyone = asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.everyone.set()
        await asyncio.wait_for(self.everyone.wait(), WAIT)


def task_of(messages: list[dict[str, Any]]) -> str:
    """The task description in the first user message (``## Task\\n<description>``)."""
    prompt = str(messages[1]["content"])
    return prompt.split("## Task\n", 1)[1].split("\n", 1)[0]


def model_by_task(steps: dict[str, Step]) -> FunctionChatModel:
    """A model that answers each task with its own async step function."""

    async def answer(messages: list[dict[str, Any]], tools: Any) -> ChatResponse | str:
        return await steps[task_of(messages)](messages)

    return FunctionChatModel(answer)


def echo(name: str) -> Step:
    async def step(messages: list[dict[str, Any]]) -> str:
        return f"{name} done"

    return step


def meet_at(barrier: Meeting, name: str) -> Step:
    """A step that answers only once every party of ``barrier`` is in a model call at once."""

    async def step(messages: list[dict[str, Any]]) -> str:
        await barrier.wait()
        return f"{name} done"

    return step


def parallel(tasks: list[Task], model: Any, **settings: Any) -> Ensemble:
    return Ensemble(tasks=tasks, llm=model, workflow=Workflow.PARALLEL, **settings)


async def test_independent_tasks_run_at_the_same_time() -> None:
    barrier = Meeting(3)  # would time out if the tasks ran one after another
    model = model_by_task({n: meet_at(barrier, n) for n in ("a", "b", "c")})
    tasks = [Task(description=n) for n in ("a", "b", "c")]

    result = await parallel(tasks, model).arun()

    assert [o.raw for o in result.task_outputs] == ["a done", "b done", "c done"]
    assert result.exit_reason is ExitReason.COMPLETED


async def test_a_task_starts_only_after_its_context_and_sees_it() -> None:
    started: list[str] = []

    def record(name: str) -> Step:
        async def step(messages: list[dict[str, Any]]) -> str:
            started.append(name)
            return f"{name} done"

        return step

    model = model_by_task({n: record(n) for n in ("top", "left", "right", "bottom")})
    top = Task(description="top")
    left = Task(description="left", context=[top])
    right = Task(description="right", context=[top])
    bottom = Task(description="bottom", context=[left, right])

    result = await parallel([bottom, right, left, top], model).arun()  # list order is free

    assert started[0] == "top" and started[-1] == "bottom"
    assert sorted(started[1:3]) == ["left", "right"]
    assert [o.raw for o in result.task_outputs] == [
        "bottom done",
        "right done",
        "left done",
        "top done",
    ]
    last_prompt = model.requests[-1].last_user_content
    assert "### left (Assistant)\nleft done" in last_prompt
    assert "### right (Assistant)\nright done" in last_prompt


async def test_outputs_keep_the_task_order_whatever_order_they_complete_in() -> None:
    first_may_finish = asyncio.Event()

    async def slow_first(messages: list[dict[str, Any]]) -> str:
        await asyncio.wait_for(first_may_finish.wait(), WAIT)
        return "first"

    async def quick_second(messages: list[dict[str, Any]]) -> str:
        first_may_finish.set()
        return "second"

    model = model_by_task({"one": slow_first, "two": quick_second})
    one, two = Task(description="one"), Task(description="two")

    result = await parallel([one, two], model).arun()

    assert [o.raw for o in result.task_outputs] == ["first", "second"]
    assert result.raw == "second"  # the last task in list order
    assert result.output_for(one) is result.task_outputs[0]
    assert result.output_for(two) is result.task_outputs[1]
    assert result.output_for(Task(description="one")) is None  # an equal task, not this one


async def test_max_concurrency_caps_the_tasks_in_flight() -> None:
    in_flight = 0
    most = 0
    two_in = asyncio.Event()

    async def step(messages: list[dict[str, Any]]) -> str:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        if in_flight == 2:
            two_in.set()
        await asyncio.wait_for(two_in.wait(), WAIT)  # the first two really overlap
        await asyncio.sleep(0)  # give a third task every chance to start too
        in_flight -= 1
        return "ok"

    names = ["a", "b", "c", "d", "e"]
    model = model_by_task(dict.fromkeys(names, step))

    result = await parallel([Task(description=n) for n in names], model, max_concurrency=2).arun()

    assert len(result.task_outputs) == 5
    assert most == 2


@tool
def touch(path: str) -> str:
    """Pretend to write a file.

    Args:
        path: where
    """
    TOUCHED.set()
    return f"touched {path}"


TOUCHED = threading.Event()


async def test_fail_fast_cancels_running_tasks_for_real_and_keeps_completed_outputs() -> None:
    TOUCHED.clear()
    b_waiting = asyncio.Event()
    b_cancelled = asyncio.Event()
    release_b = asyncio.Event()  # never set: b is still in its model call when a fails

    async def fails(messages: list[dict[str, Any]]) -> str:
        await asyncio.wait_for(b_waiting.wait(), WAIT)
        raise RuntimeError("provider exploded")

    async def would_touch(messages: list[dict[str, Any]]) -> ChatResponse:
        b_waiting.set()
        try:
            await release_b.wait()
        except asyncio.CancelledError:
            b_cancelled.set()
            raise
        return tool_call("touch", {"path": "/tmp/x"})  # pragma: no cover - cancelled first

    model = model_by_task({"done": echo("done"), "a": fails, "b": would_touch})
    done = Task(description="done")
    a = Task(description="a", context=[done])
    b = Task(description="b", tools=[touch], context=[done])
    after_b = Task(description="after b", context=[b])

    with pytest.raises(TaskExecutionError) as info:
        await parallel([done, a, b, after_b], model).arun()

    assert not isinstance(info.value, ParallelExecutionError)
    assert info.value.task is a
    assert isinstance(info.value.__cause__, RuntimeError)
    assert [o.raw for o in info.value.completed_outputs] == ["done done"]
    assert b_cancelled.is_set()
    release_b.set()
    await asyncio.sleep(0)
    assert not TOUCHED.is_set()  # b never got to its tool, not even after the run
    assert len(model.requests) == 3  # after_b never started


async def test_continue_on_error_finishes_other_branches_and_skips_downstream() -> None:
    async def fails(messages: list[dict[str, Any]]) -> str:
        raise ValueError("bad input")

    model = model_by_task({"a": fails, "b": echo("b"), "c": echo("c"), "d": echo("d")})
    a = Task(description="a")
    after_a = Task(description="c", context=[a])
    after_that = Task(description="d", context=[after_a])
    b = Task(description="b")
    ensemble = parallel(
        [a, after_a, after_that, b],
        model,
        parallel_error_strategy=ParallelErrorStrategy.CONTINUE_ON_ERROR,
    )

    with pytest.raises(ParallelExecutionError) as info:
        await ensemble.arun()

    error = info.value
    assert isinstance(error, TaskExecutionError)
    assert [o.raw for o in error.completed_outputs] == ["b done"]
    assert list(error.failures) == [a]
    assert isinstance(error.failures[a], ValueError)
    assert error.skipped == [after_a, after_that]
    assert error.task is a
    assert "1 task(s) failed" in str(error) and "2 skipped" in str(error)


async def test_handler_tasks_join_the_graph() -> None:
    def combine(ctx: TaskHandlerContext) -> str:
        return " + ".join(o.raw for o in ctx.context_outputs)

    model = model_by_task({"x": echo("x"), "y": echo("y")})
    x, y = Task(description="x"), Task(description="y")
    both = Task(description="combine", handler=combine, context=[x, y])

    result = await parallel([x, y, both], model).arun()

    assert result.raw == "x done + y done"


def test_a_cycle_is_refused_before_any_model_call_naming_its_tasks() -> None:
    model = model_by_task({})
    a = Task(description="draft", name="draft")
    b = Task(description="review", name="review", context=[a])
    a.context.append(b)

    with pytest.raises(ValidationError, match=r"cycle: 'draft' -> 'review' -> 'draft'"):
        parallel([a, b], model)


def test_a_cycle_made_after_construction_fails_at_run_before_any_call() -> None:
    model = model_by_task({})
    a, b = Task(description="a"), Task(description="b")
    ensemble = parallel([a, b], model)
    a.context.append(b)
    b.context.append(a)

    with pytest.raises(ValueError, match="cycle"):
        ensemble.run()
    assert model.requests == []


def test_a_context_task_outside_the_ensemble_is_refused() -> None:
    stranger = Task(description="not in the team")
    task = Task(description="work", context=[stranger])

    with pytest.raises(ValidationError, match="'not in the team', which is not in this ensemble"):
        parallel([task], model_by_task({}))


@pytest.mark.parametrize("bad", [0, -1])
def test_max_concurrency_must_be_positive(bad: int) -> None:
    with pytest.raises(ValidationError, match="max_concurrency"):
        parallel([Task(description="x")], model_by_task({}), max_concurrency=bad)


async def test_sequential_outputs_can_be_looked_up_by_task_too() -> None:
    model = model_by_task({"a": echo("a"), "b": echo("b")})
    a, b = Task(description="a", agent=Agent(role="R", goal="g")), Task(description="b")

    result = await Ensemble(tasks=[a, b], llm=model).arun()

    assert result.output_for(a) is result.task_outputs[0]
    assert result.output_for(b) is result.task_outputs[1]


async def test_an_exit_early_from_a_tool_stops_the_graph_keeping_what_completed() -> None:
    from agentensemble import ExitEarlyError

    @tool
    def halt(reason: str) -> str:
        """Stop the run.

        Args:
            reason: why
        """
        raise ExitEarlyError(reason)

    other_cancelled = asyncio.Event()
    quick_done = asyncio.Event()

    async def waits_forever(messages: list[dict[str, Any]]) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            other_cancelled.set()
            raise
        return "never"  # pragma: no cover

    async def quick(messages: list[dict[str, Any]]) -> str:
        quick_done.set()
        return "quick done"

    async def halting(messages: list[dict[str, Any]]) -> ChatResponse:
        await asyncio.wait_for(quick_done.wait(), WAIT)
        await asyncio.sleep(0)  # the quick task's output is recorded first
        return tool_call("halt", {"reason": "seen enough"})

    model = model_by_task({"forever": waits_forever, "quick": quick, "halting": halting})
    tasks = [
        Task(description="forever"),
        Task(description="quick"),
        Task(description="halting", tools=[halt]),
    ]

    result = await parallel(tasks, model).arun()

    assert result.exit_reason is ExitReason.USER_EXIT_EARLY
    assert [o.raw for o in result.task_outputs] == ["quick done"]
    assert other_cancelled.is_set()


async def test_cancelling_the_run_cancels_every_running_task() -> None:
    TOUCHED.clear()
    both_waiting = Meeting(2)
    cancelled: list[str] = []

    def waiting(name: str) -> Step:
        async def step(messages: list[dict[str, Any]]) -> ChatResponse:
            try:
                await both_waiting.wait()
                await asyncio.Event().wait()  # only cancellation ends this call
            except asyncio.CancelledError:
                cancelled.append(name)
                raise
            return tool_call("touch", {"path": name})  # pragma: no cover

        return step

    model = model_by_task({"a": waiting("a"), "b": waiting("b")})
    tasks = [Task(description=n, tools=[touch]) for n in ("a", "b")]
    run = asyncio.ensure_future(parallel(tasks, model).arun())
    await asyncio.wait_for(both_waiting.everyone.wait(), WAIT)

    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, WAIT)

    assert sorted(cancelled) == ["a", "b"]
    assert not TOUCHED.is_set()
