"""A tool's execution policy: ``timeout`` (a failed call the model sees, the run goes on; a sync
body abandoned in its thread, an async one cancelled), ``retries`` (the body again, with
backoff; never a gated tool's) and ``max_concurrency`` (bodies at once across the run)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, ClassVar

import pytest

from agentensemble import Agent, AgentTool, Ensemble, Task, ToolResult, tool
from agentensemble.errors import ConfigurationError, ToolExecutionError
from agentensemble.events import ToolCallCompleted, ToolCallStarted, ToolCallTimedOut
from agentensemble.testing import ScriptedChatModel, tool_call, tool_calls
from agentensemble.tools import _calls
from agentensemble.tools.resolver import ToolResolver
from agentensemble.workflows import Workflow

pytestmark = pytest.mark.anyio

WAIT = 10.0  # an upper bound on waiting for a condition; never reached when the code is right


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_calls, "RETRY_BACKOFF", 0.0)


class Events:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.seen.append(event)

    def of(self, kind: type) -> list[Any]:
        return [event for event in self.seen if isinstance(event, kind)]


def run(tools: list[Any], script: list[Any], **ensemble: Any) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(script)
    agent = Agent(role="Worker", goal="Work", tools=tools, llm=model)
    output = Ensemble(tasks=[Task(description="Work", agent=agent)], **ensemble).run()
    return output, model


# -- settings that cannot work ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.5}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"timeout": "5"}, "timeout"),
        ({"retries": -1}, "retries"),
        ({"retries": 1.5}, "retries"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"max_concurrency": 2.0}, "max_concurrency"),
    ],
)
def test_a_policy_that_cannot_work_is_refused_naming_the_setting(
    settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=rf"tool 'lookup': {named} must be"):

        @tool(**settings)
        def lookup(query: str) -> str:
            """Look up."""
            return query

    class Lookup(AgentTool):
        name = "lookup"
        description = "Look up."

        def execute(self, input: str) -> ToolResult:
            return ToolResult.success(input)

    for key, value in settings.items():
        setattr(Lookup, key, value)
    # a class attribute's bad timeout also names the class and the way out (own_deadline)
    shown = r"tool 'lookup' \(Lookup\)" if named == "timeout" else "tool 'lookup'"
    with pytest.raises(ConfigurationError, match=rf"{shown}: {named} must be"):
        ToolResolver().resolve([Lookup()])


def test_the_policy_is_decided_once_in_the_call_plan() -> None:
    @tool(timeout=2.5, retries=1, max_concurrency=3)
    def lookup(query: str) -> str:
        """Look up."""
        return query

    class Plain(AgentTool):
        name = "plain"
        description = "Plain."

        def execute(self, input: str) -> ToolResult:
            return ToolResult.success(input)

    resolved = ToolResolver().resolve([lookup, Plain()])
    policy = resolved.get("lookup").plan.policy  # type: ignore[union-attr]
    assert policy == _calls.CallPolicy("lookup", 2.5, 1, 3, gated=False)
    assert resolved.get("plain").plan.policy is None  # type: ignore[union-attr]


def test_a_tool_that_keeps_its_own_deadline_gets_the_policys_as_a_backstop() -> None:
    from agentensemble.tools.builtin import HttpFetch, RunCommand

    fetch = HttpFetch(allow=["example.org"], timeout=3.0)
    command = RunCommand(allow=["ls"], timeout=4.0)
    resolved = ToolResolver().resolve([fetch, command])
    grace = _calls.OWN_DEADLINE_GRACE
    assert resolved.get("http_fetch").plan.policy.timeout == 3.0 + grace  # type: ignore[union-attr]
    assert resolved.get("run_command").plan.policy.timeout == 4.0 + grace  # type: ignore[union-attr]


# -- timeouts ---------------------------------------------------------------------------------


def test_a_sync_body_past_its_timeout_is_a_failed_call_and_the_run_goes_on() -> None:
    entered, release, left = threading.Event(), threading.Event(), threading.Event()

    @tool(timeout=0.2)
    def hang(query: str) -> str:
        """Wait for an answer that does not come."""
        entered.set()
        release.wait(WAIT)  # held until the test lets go: the run must not wait for it
        left.set()
        return "too late"

    events = Events()
    output, model = run(
        [hang], [tool_call("hang", {"query": "q"}), "went on without it"], listeners=[events]
    )
    try:
        assert output.raw == "went on without it"
        record = output.task_outputs[0].tool_calls[0]
        assert not record.is_success
        assert record.output == "Error: tool 'hang' timed out after 0.2 s"
        assert model.requests[1].messages[-1]["content"] == record.output  # the model saw it
        assert entered.is_set() and not left.is_set()  # abandoned in its thread, not waited for
        [timed_out] = events.of(ToolCallTimedOut)
        assert (timed_out.tool_name, timed_out.timeout, timed_out.agent_role) == (
            "hang",
            0.2,
            "Worker",
        )
    finally:
        release.set()
    assert left.wait(WAIT)  # the abandoned body ends on its own once let go


def test_an_async_body_past_its_timeout_is_cancelled() -> None:
    cancelled = threading.Event()

    @tool(timeout=0.2)
    async def hang(query: str) -> str:
        """Wait for an answer that does not come."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    output, _ = run([hang], [tool_call("hang", {"query": "q"}), "done"])
    assert cancelled.is_set()
    assert output.task_outputs[0].tool_calls[0].output == (
        "Error: tool 'hang' timed out after 0.2 s"
    )


# -- retries ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("retries", "fails", "runs", "success"),
    [
        (0, 1, 1, False),  # no retries: the first failure is the call's
        (2, 2, 3, True),  # two failures, then an answer
        (1, 5, 2, False),  # the retries run out: the last failure is the call's
    ],
)
def test_retries_run_the_body_again_after_it_raised(
    retries: int, fails: int, runs: int, success: bool
) -> None:
    attempts: list[int] = []

    @tool(retries=retries)
    def flaky(query: str) -> str:
        """Answer after a few failures."""
        attempts.append(len(attempts) + 1)
        if len(attempts) <= fails:
            raise ConnectionError(f"attempt {len(attempts)} failed")
        return "answer"

    output, _ = run([flaky], [tool_call("flaky", {"query": "q"}), "done"])
    record = output.task_outputs[0].tool_calls[0]
    assert len(attempts) == runs
    assert record.is_success is success
    assert record.output == (
        "answer" if success else f"Error: ConnectionError: attempt {runs} failed"
    )


def test_a_body_that_timed_out_is_retried_too() -> None:
    calls: list[int] = []

    @tool(timeout=0.2, retries=1)
    async def slow_once(query: str) -> str:
        """Slow the first time."""
        calls.append(1)
        if len(calls) == 1:
            await asyncio.Event().wait()
        return "second time lucky"

    output, _ = run([slow_once], [tool_call("slow_once", {"query": "q"}), "done"])
    assert len(calls) == 2
    assert output.task_outputs[0].tool_calls[0].output == "second time lucky"


@pytest.mark.parametrize(
    "refusal",
    [
        lambda: ToolResult.failure("no such order"),  # returned: the tool's answer
        lambda: (_ for _ in ()).throw(ToolExecutionError("no such order")),  # raised on purpose
    ],
)
def test_a_failure_the_tool_means_is_not_retried(refusal: Any) -> None:
    calls: list[int] = []

    @tool(retries=3)
    def refuses(query: str) -> ToolResult:
        """Say no."""
        calls.append(1)
        return refusal()  # type: ignore[no-any-return]

    output, _ = run([refuses], [tool_call("refuses", {"query": "q"}), "done"])
    assert len(calls) == 1
    assert output.task_outputs[0].tool_calls[0].output == "Error: no such order"


def test_an_approval_gated_tool_is_never_run_again_without_a_new_decision() -> None:
    from agentensemble_review import Continue, ScriptedReviewHandler

    calls: list[int] = []
    reviewer = ScriptedReviewHandler([Continue()])

    @tool(retries=3, requires_approval=True)
    def pay(amount: int) -> str:
        """Pay."""
        calls.append(amount)
        raise ConnectionError("the bank hung up")

    resolved = ToolResolver().resolve([pay])
    assert resolved.get("pay").plan.policy.gated  # type: ignore[union-attr]
    output, _ = run([pay], [tool_call("pay", {"amount": 5}), "done"], review_handler=reviewer)
    assert calls == [5] and len(reviewer.requests) == 1  # one decision, one run of the body
    assert output.task_outputs[0].tool_calls[0].output == "Error: ConnectionError: the bank hung up"


# -- max_concurrency --------------------------------------------------------------------------


class Gauge:
    """Bodies running at once: each holds until the test releases them all."""

    def __init__(self) -> None:
        self.running = 0
        self.release = asyncio.Event()

    async def enter(self) -> None:
        self.running += 1
        try:
            await asyncio.wait_for(self.release.wait(), WAIT)
        finally:
            self.running -= 1


async def held_at_once(fetch: Any, gauge: Gauge) -> int:
    """Run two tasks in parallel, each calling ``fetch`` twice in one turn; once all four calls
    started and the loop has had every chance to start their bodies, how many bodies run."""
    two = tool_calls(*(("fetch", {"input": str(n)}) for n in range(2)))
    tasks = [
        Task(
            description=f"Read {n}",
            agent=Agent(
                role=f"Reader {n}", goal="Read", tools=[fetch], llm=ScriptedChatModel([two, "ok"])
            ),
        )
        for n in range(2)
    ]
    events = Events()
    ensemble = Ensemble(tasks=tasks, workflow=Workflow.PARALLEL, listeners=[events])
    running = asyncio.ensure_future(ensemble.arun())
    for _ in range(int(WAIT / 0.01)):  # wait for the condition: four calls started
        if len(events.of(ToolCallStarted)) == 4 and gauge.running >= 2:
            break
        await asyncio.sleep(0.01)
    for _ in range(50):  # every turn of the loop a body that may enter needs
        await asyncio.sleep(0)
    at_once = gauge.running
    gauge.release.set()
    await running
    assert len(events.of(ToolCallCompleted)) == 4
    return at_once


async def test_max_concurrency_bounds_bodies_at_once_across_the_run() -> None:
    gauge = Gauge()

    class Fetch(AgentTool):
        name = "fetch"
        description = "Fetch a page."
        max_concurrency: ClassVar[int | None] = 2  # type: ignore[misc]

        async def aexecute(self, input: str) -> ToolResult:
            await gauge.enter()
            return ToolResult.success(f"page {input}")

    assert await held_at_once(Fetch(), gauge) == 2  # two tasks' four calls, two at a time


async def test_without_a_bound_the_same_calls_all_run_at_once() -> None:
    gauge = Gauge()

    class Fetch(AgentTool):
        name = "fetch"
        description = "Fetch a page."

        async def aexecute(self, input: str) -> ToolResult:
            await gauge.enter()
            return ToolResult.success(f"page {input}")

    assert await held_at_once(Fetch(), gauge) == 4
