"""How the calls of one model turn run, planned from their tools' plans alone."""

from __future__ import annotations

import pytest

from agentensemble.execution.tool_turn import TurnShape, plan_turn
from agentensemble.tools._calls import UNKNOWN_TOOL, CallPlan

SYNC = CallPlan(
    instrumented=True,
    declares_approval=False,
    can_ask=False,
    body_in_thread=True,
    makes_own_steps=False,
)
ASYNC = CallPlan(
    instrumented=True,
    declares_approval=False,
    can_ask=False,
    body_in_thread=False,
    makes_own_steps=False,
)
GATED = CallPlan(
    instrumented=True,
    declares_approval=True,
    can_ask=True,
    body_in_thread=True,
    makes_own_steps=False,
)
DELEGATES = CallPlan(
    instrumented=True,
    declares_approval=False,
    can_ask=False,
    body_in_thread=False,
    makes_own_steps=True,
)


@pytest.mark.parametrize(
    ("plans", "checkpointed", "handler_waits", "shape"),
    [
        ([SYNC], False, False, "alone"),
        ([UNKNOWN_TOOL], False, False, "alone"),
        ([SYNC], True, False, "together"),  # a step runner's code runs on the loop
        ([ASYNC], False, False, "together"),
        ([GATED], False, False, "together"),
        ([SYNC, SYNC], False, False, "together"),
        ([DELEGATES], False, False, "together"),  # nothing to number in a plain run
        ([DELEGATES], True, False, "in_order"),
        ([DELEGATES, SYNC], True, False, "branches"),
        ([GATED, GATED], True, True, "branches"),  # approvals waiting in the run
        ([GATED, GATED], True, False, "together"),  # approvals asked inside their steps
        ([], False, False, "together"),
    ],
)
def test_a_turn_is_planned_from_its_calls_plans(
    plans: list[CallPlan], checkpointed: bool, handler_waits: bool, shape: TurnShape
) -> None:
    assert plan_turn(plans, checkpointed=checkpointed, handler_waits=handler_waits) == shape
