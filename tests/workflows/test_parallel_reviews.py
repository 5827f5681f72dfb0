"""PARALLEL with human review: gates and approvals of concurrent tasks reach the one handler
concurrently, and an ExitEarly stops the whole run, keeping what completed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_parallel import Meeting, echo, model_by_task, parallel

from agentensemble import ChatResponse, ExitReason, Task, tool
from agentensemble.testing import tool_call
from agentensemble_review import Continue, ExitEarly, Review, ReviewRequest

pytestmark = pytest.mark.anyio


class MeetingReviewer:
    """Answers only once ``parties`` requests are waiting at the same time (or times out)."""

    def __init__(self, parties: int) -> None:
        self.barrier = Meeting(parties)
        self.requests: list[ReviewRequest] = []

    async def areview(self, request: ReviewRequest) -> Any:
        self.requests.append(request)
        await self.barrier.wait()
        return Continue()


@pytest.mark.parametrize("gate", ["before_review", "review"])
async def test_gates_of_concurrent_tasks_are_asked_concurrently(gate: str) -> None:
    reviewer = MeetingReviewer(2)
    model = model_by_task({"a": echo("a"), "b": echo("b")})
    tasks = [Task(description=n, **{gate: Review.required()}) for n in ("a", "b")]

    result = await parallel(tasks, model, review_handler=reviewer).arun()

    assert [o.raw for o in result.task_outputs] == ["a done", "b done"]
    assert len(reviewer.requests) == 2


@tool(requires_approval=True)
def deploy(target: str) -> str:
    """Deploy somewhere.

    Args:
        target: where to deploy
    """
    return f"deployed to {target}"


async def test_tool_approvals_of_concurrent_tasks_are_asked_concurrently() -> None:
    reviewer = MeetingReviewer(2)

    def deploying(target: str) -> Any:
        async def step(messages: list[dict[str, Any]]) -> ChatResponse | str:
            if messages[-1]["role"] == "tool":
                return str(messages[-1]["content"])
            return tool_call("deploy", {"target": target})

        return step

    model = model_by_task({"a": deploying("eu"), "b": deploying("us")})
    tasks = [Task(description=n, tools=[deploy]) for n in ("a", "b")]

    result = await parallel(tasks, model, review_handler=reviewer).arun()

    assert [o.raw for o in result.task_outputs] == ["deployed to eu", "deployed to us"]
    assert sorted(r.tool_name or "" for r in reviewer.requests) == ["deploy", "deploy"]


class StopAfterFirst:
    """Stops the run when it reviews the output of task ``quick``."""

    async def areview(self, request: ReviewRequest) -> Any:
        return ExitEarly("enough") if request.output == "quick done" else Continue()


async def test_exit_early_cancels_what_still_runs_and_keeps_what_completed() -> None:
    slow_cancelled = asyncio.Event()
    slow_started = asyncio.Event()

    async def slow(messages: list[dict[str, Any]]) -> str:
        slow_started.set()
        try:
            await asyncio.Event().wait()  # only cancellation ends this call
        except asyncio.CancelledError:
            slow_cancelled.set()
            raise
        return "never"  # pragma: no cover

    async def quick(messages: list[dict[str, Any]]) -> str:
        await asyncio.wait_for(slow_started.wait(), 10.0)
        return "quick done"

    model = model_by_task({"slow": slow, "quick": quick, "later": echo("later")})
    quick_task = Task(description="quick", review=Review.required())
    later = Task(description="later", context=[quick_task])
    tasks = [Task(description="slow"), quick_task, later]

    result = await parallel(tasks, model, review_handler=StopAfterFirst()).arun()

    assert result.exit_reason is ExitReason.USER_EXIT_EARLY
    assert [o.raw for o in result.task_outputs] == ["quick done"]
    assert result.output_for(quick_task) is not None and result.output_for(later) is None
    assert slow_cancelled.is_set()
