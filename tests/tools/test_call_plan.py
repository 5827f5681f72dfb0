"""Each resolved tool carries its ``CallPlan``, read from the tool once: the executor plans a
turn from it and never looks inside the tool."""

from __future__ import annotations

from typing import Any

import pytest

from agentensemble import AbstractAgentTool, AgentTool, ToolPipeline, tool
from agentensemble.tools import ToolResolver
from agentensemble.tools._calls import UNKNOWN_TOOL, CallPlan
from agentensemble.tools.resolver import ExecutableTool, InstrumentedExecutable
from agentensemble_review import Review


@tool(description="Echo.")
def echo(value: str) -> str:
    return value


@tool(description="Echo, async.")
async def aecho(value: str) -> str:
    return value


@tool(description="Echo, gated.", requires_approval=True)
def gated(value: str) -> str:
    return value


@tool(description="Echo, gated when it deletes.", requires_approval=lambda shown: "rm" in shown)
def maybe(value: str) -> str:
    return value


@tool(description="Echo, never reviewed.", requires_approval=Review.skip())
def skipped(value: str) -> str:
    return value


class Plain(AgentTool):
    name = "plain"
    description = "A plain tool."

    def execute(self, input: str) -> str:
        return input


class PlainGated(Plain):
    name = "plain_gated"
    requires_approval = True


class Counted(AbstractAgentTool):
    name = "counted"
    description = "An instrumented tool."

    def do_execute(self, input: str) -> str:
        return input


class Asks(Counted):
    name = "asks"

    def needs_approval(self, input: str) -> bool:
        return "rm" in input


class Delegates(Counted):
    name = "delegates"
    durable_itself = True  # as DelegateTool: its work is steps of its own


def plan(
    instrumented: bool, declares: bool, can_ask: bool, in_thread: bool, own_steps: bool
) -> CallPlan:
    return CallPlan(
        instrumented=instrumented,
        declares_approval=declares,
        can_ask=can_ask,
        body_in_thread=in_thread,
        makes_own_steps=own_steps,
    )


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (echo, plan(True, False, False, True, False)),
        (aecho, plan(True, False, False, False, False)),
        (gated, plan(True, True, True, True, False)),
        (maybe, plan(True, True, True, True, False)),
        (skipped, plan(True, False, True, True, False)),  # a Review setting is still a rule
        (Plain(), plan(False, False, True, False, False)),  # its rule is read at each call
        (PlainGated(), plan(False, True, True, False, False)),
        (Counted(), plan(True, False, False, False, False)),
        (Asks(), plan(True, False, True, False, False)),
        (Delegates(), plan(True, False, False, False, True)),
        (ToolPipeline.of(echo, gated), plan(True, True, True, False, False)),
    ],
    ids=lambda value: getattr(value, "name", None) if not isinstance(value, CallPlan) else "",
)
def test_every_tool_shape_gets_its_plan_when_resolved(item: Any, expected: CallPlan) -> None:
    (executable,) = ToolResolver().resolve([item])
    assert executable.plan == expected
    assert executable.requires_approval is expected.declares_approval
    kind = InstrumentedExecutable if expected.instrumented else ExecutableTool
    assert type(executable) is kind


def test_a_function_resolved_again_keeps_its_plan() -> None:
    first = ToolResolver().resolve([echo]).tools[0].plan
    assert ToolResolver().resolve([echo]).tools[0].plan is first


@pytest.mark.parametrize(
    ("the_plan", "alone"),
    [
        (plan(True, False, False, True, False), True),  # a sync @tool that never asks
        (plan(True, True, True, True, False), False),  # it may ask on the loop
        (plan(True, False, False, False, False), False),  # user code on the loop
        (UNKNOWN_TOOL, True),  # answered by the framework alone
    ],
)
def test_a_call_runs_alone_only_when_nothing_but_the_framework_runs_on_the_loop(
    the_plan: CallPlan, alone: bool
) -> None:
    assert the_plan.runs_alone is alone


@pytest.mark.parametrize(
    ("the_plan", "handler_waits", "own"),
    [
        (plan(True, False, False, False, True), False, True),  # a delegation
        (plan(True, True, True, True, False), True, True),  # its approval waits in the run
        (plan(True, True, True, True, False), False, False),  # asked inside its step
        (plan(True, False, True, False, False), True, False),  # declares nothing
    ],
)
def test_a_call_makes_its_own_steps_when_it_delegates_or_its_approval_waits_in_the_run(
    the_plan: CallPlan, handler_waits: bool, own: bool
) -> None:
    assert the_plan.own_steps(handler_waits) is own
