"""When a run stops, the other tool calls of the same model turn stop with it.

Attack: one call of a turn stops the run (ExitEarlyError, a ConfigurationError, a review error)
while another call of the same turn is still running or waiting for approval. The other call
went on after ``arun()`` had returned, and an approval granted late still let it act. Each test
proves the order with events: the stopping call waits until its sibling is under way.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from agentensemble import (
    AbstractAgentTool,
    Agent,
    ConfigurationError,
    Ensemble,
    ExitEarlyError,
    ExitReason,
    Task,
    TaskExecutionError,
)
from agentensemble.testing import ScriptedChatModel, tool_calls
from agentensemble_review import Continue, ExitEarly, ReviewRequest

pytestmark = pytest.mark.anyio
BOUND = 10  # seconds; the bugs ruled out here keep a call alive forever


class Sibling(AbstractAgentTool):
    """An async call that runs until cancelled, and says so."""

    name = "sibling"
    description = "Works for a long time"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.ended = False
        self.acted = False

    async def ado_execute(self, input: str) -> str:
        self.started.set()
        try:
            await asyncio.Event().wait()
            self.acted = True
            return "acted"
        finally:
            self.ended = True


class Stopper(AbstractAgentTool):
    """Stops the run once ``ready`` is set."""

    name = "stopper"
    description = "Stops the run"

    def __init__(self, ready: asyncio.Event, error: BaseException) -> None:
        self.ready = ready
        self.error = error

    async def ado_execute(self, input: str) -> str:
        await asyncio.wait_for(self.ready.wait(), BOUND)
        raise self.error


def ensemble(tools: list[object], reviewer: object | None = None) -> Ensemble:
    model = ScriptedChatModel(
        [tool_calls(("sibling", {"input": "x"}), ("stopper", {"input": "x"})), "never"]
    )
    agent = Agent(role="Worker", goal="Work", tools=tools, llm=model)
    return Ensemble(tasks=[Task(description="Go", agent=agent)], review_handler=reviewer)


@pytest.mark.parametrize(
    "error",
    [ExitEarlyError("enough"), ConfigurationError("tool found bad wiring")],
    ids=["ExitEarlyError", "ConfigurationError"],
)
async def test_a_call_that_stops_the_run_ends_its_running_siblings_before_arun_returns(
    error: BaseException,
) -> None:
    sibling = Sibling()
    run = ensemble([sibling, Stopper(sibling.started, error)])
    try:
        output = await asyncio.wait_for(run.arun(), BOUND)
    except TaskExecutionError:
        assert isinstance(error, ConfigurationError)
    else:
        assert output.exit_reason is ExitReason.USER_EXIT_EARLY
    assert sibling.ended
    assert not sibling.acted


class Guarded(AbstractAgentTool):
    """Needs approval; records whether its body ever ran."""

    name = "sibling"
    description = "Dangerous"
    requires_approval = True

    def __init__(self) -> None:
        self.ran = False

    def do_execute(self, input: str) -> str:
        self.ran = True
        return "did it"


class SlowAsyncReviewer:
    """Announces each request, then answers Continue only when released."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False

    async def areview(self, request: ReviewRequest) -> Continue:
        self.asked.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return Continue()


async def test_a_pending_async_approval_in_a_stopped_turn_is_withdrawn_and_never_acts() -> None:
    reviewer = SlowAsyncReviewer()
    guarded = Guarded()
    run = ensemble([guarded, Stopper(reviewer.asked, ExitEarlyError("stop"))], reviewer)
    output = await asyncio.wait_for(run.arun(), BOUND)
    assert output.exit_reason is ExitReason.USER_EXIT_EARLY
    assert reviewer.cancelled  # withdrawn before arun() returned
    reviewer.release.set()
    await asyncio.sleep(0)  # would let a surviving approval go on; nothing may
    assert not guarded.ran


class SlowSyncReviewer:
    """A thread-bound reviewer (like the console): answers Continue when released."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()

    def review(self, request: ReviewRequest) -> Continue:
        self.asked.set()
        assert self.release.wait(BOUND)
        return Continue()


class AsksItself(AbstractAgentTool):
    """A sync body asking for approval mid-way (request_approval), acting only on Continue."""

    name = "sibling"
    description = "Asks before it acts"

    def __init__(self) -> None:
        self.decisions: list[object] = []
        self.finished = threading.Event()

    def do_execute(self, input: str) -> str:
        decision = self.request_approval("delete everything?")
        self.decisions.append(decision)
        self.finished.set()
        return "deleted" if isinstance(decision, Continue) else "kept"


class StopperAfterThread(AbstractAgentTool):
    name = "stopper"
    description = "Stops the run once the reviewer was asked"

    def __init__(self, asked: threading.Event) -> None:
        self.asked = asked

    async def ado_execute(self, input: str) -> str:
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, self.asked.wait, BOUND)
        raise ExitEarlyError("stop")


async def test_an_approval_answered_after_the_run_stopped_approves_nothing() -> None:
    reviewer = SlowSyncReviewer()
    tool = AsksItself()
    run = ensemble([tool, StopperAfterThread(reviewer.asked)], reviewer)
    output = await asyncio.wait_for(run.arun(), BOUND)
    assert output.exit_reason is ExitReason.USER_EXIT_EARLY
    reviewer.release.set()  # the human says yes, too late
    assert await asyncio.get_running_loop().run_in_executor(None, tool.finished.wait, BOUND)
    (decision,) = tool.decisions
    assert isinstance(decision, ExitEarly)
    assert decision.reason is not None and "stopped" in decision.reason
