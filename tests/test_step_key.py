"""``step_key``: the seam that names what a durable step asks (a review's id) stably.

Outside a step runner that keys steps it is None, and a review keeps its fresh random id; with
one, task reviews and tool approvals take the runner's key as their id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from agentensemble import Agent, Ensemble, Task
from agentensemble.steps import StepKind, step_key, use_step_runner
from agentensemble.testing import ScriptedChatModel
from agentensemble_review import Continue, Review, ReviewDecision, ReviewRequest

T = TypeVar("T")


class PlainRunner:
    """A step runner without keys (as a tracing or test runner may be)."""

    async def run_step(
        self, kind: StepKind, name: str, call: Callable[[], Awaitable[T]], *, durable_itself: bool
    ) -> T:
        return await call()


class KeyedRunner(PlainRunner):
    """Keys each step by its name and counts the keys asked, as the durable runner does."""

    def __init__(self) -> None:
        self.current = ""
        self.asked = 0

    async def run_step(
        self, kind: StepKind, name: str, call: Callable[[], Awaitable[T]], *, durable_itself: bool
    ) -> T:
        self.current, self.asked = name, 0
        return await call()

    def step_key(self) -> str | None:
        key = f"run-1:{self.current}.{self.asked}"
        self.asked += 1
        return key


class Recorder:
    """A review handler that approves and keeps every request it was asked."""

    def __init__(self) -> None:
        self.requests: list[ReviewRequest] = []

    def review(self, request: ReviewRequest) -> ReviewDecision:
        self.requests.append(request)
        return Continue()


@pytest.mark.parametrize("runner", [None, PlainRunner()])
def test_no_key_without_a_runner_that_keys_steps(runner: Any) -> None:
    with use_step_runner(runner):
        assert step_key() is None


def test_a_keyed_runner_names_the_task_review_and_keeps_plain_runs_random() -> None:
    def ensemble(handler: Recorder) -> Ensemble:
        writer = Agent(role="Writer", goal="Write", llm=ScriptedChatModel(["A draft."]))
        task = Task(description="Draft", agent=writer, review=Review.required())
        return Ensemble(tasks=[task], review_handler=handler)

    keyed, plain = Recorder(), Recorder()
    with use_step_runner(KeyedRunner()):
        ensemble(keyed).run()
    ensemble(plain).run()
    ensemble(plain).run()

    assert [r.id for r in keyed.requests] == ["run-1:review:after_execution.0"]
    assert keyed.requests[0].output == "A draft."
    first, second = (r.id for r in plain.requests)
    assert first != second and not first.startswith("run-1:")  # fresh random ids


def test_a_keyed_runner_names_a_tool_approval_after_the_tool_step() -> None:
    from agentensemble import tool
    from agentensemble.testing import text, tool_call

    removed: list[str] = []

    @tool(requires_approval=True)
    def remove(path: str) -> str:
        """Remove a file."""
        removed.append(path)
        return "removed"

    handler = Recorder()
    model = ScriptedChatModel([tool_call("remove", {"path": "/tmp/old"}), text("Done.")])
    writer = Agent(role="Janitor", goal="Tidy", tools=[remove], llm=model)
    ensemble = Ensemble(tasks=[Task(description="Tidy", agent=writer)], review_handler=handler)
    with use_step_runner(KeyedRunner()):
        ensemble.run()

    assert [r.id for r in handler.requests] == ["run-1:tool:remove.0"]
    assert removed == ["/tmp/old"]
