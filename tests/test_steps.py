"""The step seam: every model, tool and review call goes through the installed step runner.

A durable run installs one that checkpoints each call; here a recording runner shows what it
is asked, and that a delegation (whose worker makes steps of its own) runs in the run itself,
its calls of one turn one after another, so their steps start in the same order on a replay.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from agentensemble import (
    Agent,
    DelegationCompleted,
    DelegationStarted,
    Ensemble,
    EnsembleEvent,
    Task,
    Workflow,
)
from agentensemble.steps import StepKind, as_step, checkpointing, use_step_runner
from agentensemble.testing import ScriptedChatModel, tool_calls

pytestmark = pytest.mark.anyio
T = TypeVar("T")


class RecordingRunner:
    def __init__(self) -> None:
        self.steps: list[tuple[StepKind, str, bool]] = []

    async def run_step(
        self, kind: StepKind, name: str, call: Callable[[], Awaitable[T]], *, durable_itself: bool
    ) -> T:
        self.steps.append((kind, name, durable_itself))
        return await call()


async def test_without_a_runner_a_step_is_a_plain_call() -> None:
    async def answer() -> int:
        return 42

    assert not checkpointing()
    assert await as_step("tool", "tool:x", answer) == 42


async def test_a_managers_delegations_of_one_turn_run_one_after_another_when_checkpointed() -> None:
    manager = ScriptedChatModel(
        [
            tool_calls(
                ("delegate_task", {"agent_role": "Researcher", "instructions": "Facts"}),
                ("delegate_task", {"agent_role": "Writer", "instructions": "Prose"}),
            ),
            "Final report",
        ]
    )
    seen: list[str] = []

    class Listener:
        def on_event(self, event: EnsembleEvent) -> None:
            if isinstance(event, (DelegationStarted, DelegationCompleted)):
                seen.append(f"{type(event).__name__}:{event.to_role}")

    ensemble = Ensemble(
        tasks=[Task(description="Write a report", expected_output="A report")],
        agents=[
            Agent(role="Researcher", goal="Facts", llm=ScriptedChatModel(["moon"])),
            Agent(role="Writer", goal="Prose", llm=ScriptedChatModel(["tides"])),
        ],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=manager,
        listeners=[Listener()],
    )
    runner = RecordingRunner()
    with use_step_runner(runner):
        output = await ensemble.arun()

    assert output.raw == "Final report"
    assert seen == [
        "DelegationStarted:Researcher",
        "DelegationCompleted:Researcher",
        "DelegationStarted:Writer",
        "DelegationCompleted:Writer",
    ]
    # the delegations run in the run itself; each worker's model call is a step of its own
    # (the call, then its body: both run in the run itself, never as one step)
    delegation = [("tool", "tool:delegate_task", True)] * 2
    assert runner.steps == [
        ("model", "model:Manager", False),
        *delegation,
        ("model", "model:Researcher", False),
        *delegation,
        ("model", "model:Writer", False),
        ("model", "model:Manager", False),
    ]


async def test_a_plain_tool_run_asks_the_runner_for_every_step_and_runs_alike_without_one() -> None:
    # without a runner ``as_step`` is the plain call itself: the same run with a runner
    # installed must still see the model turns and both tool layers
    from agentensemble import tool

    ran: list[str] = []

    @tool(description="Echo a value.")
    def echo(value: str) -> str:
        ran.append(value)
        return value.upper()

    def ensemble() -> Ensemble:
        model = ScriptedChatModel([tool_calls(("echo", {"value": "x"})), "done"])
        agent = Agent(role="Helper", goal="g", tools=[echo], llm=model)
        return Ensemble(tasks=[Task(description="d", expected_output="e", agent=agent)])

    plain = await ensemble().arun()
    runner = RecordingRunner()
    with use_step_runner(runner):
        stepped = await ensemble().arun()

    assert runner.steps == [
        ("model", "model:Helper", False),
        ("tool", "tool:echo", False),  # the call, as the executor checkpoints it
        ("tool", "tool:echo", False),  # its body, behind the tool's own gate
        ("model", "model:Helper", False),
    ]
    assert ran == ["x", "x"]
    for output in (plain, stepped):
        record = output.task_outputs[0].tool_calls[0]
        assert (record.output, record.arguments, record.model_arguments) == (
            "X",
            '{"value": "x"}',
            None,
        )
        assert output.raw == "done"


async def test_a_step_takes_the_callable_and_its_arguments_with_or_without_a_runner() -> None:
    async def add(a: int, b: int) -> int:
        return a + b

    assert await as_step("tool", "tool:add", add, 2, 3) == 5
    runner = RecordingRunner()
    with use_step_runner(runner):
        assert await as_step("tool", "tool:add", add, 4, 5, durable_itself=True) == 9
    assert runner.steps == [("tool", "tool:add", True)]
