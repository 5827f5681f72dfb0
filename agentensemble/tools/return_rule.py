"""The immediate-return rule: does a model response's tool calls end the task? A pure function."""

from __future__ import annotations

from collections.abc import Sequence

from agentensemble.outputs import ReturnBehavior

_IMMEDIATE = frozenset({ReturnBehavior.IMMEDIATE, ReturnBehavior.IMMEDIATE_IF_LAST})


def should_return_immediately(behaviors: Sequence[ReturnBehavior], any_failed: bool) -> bool:
    """True iff no call failed AND (the last is IMMEDIATE_IF_LAST, or every one is IMMEDIATE or
    IMMEDIATE_IF_LAST). ``behaviors`` are the response's calls in call order; empty → False.
    """
    if any_failed or not behaviors:
        return False
    if behaviors[-1] is ReturnBehavior.IMMEDIATE_IF_LAST:
        return True
    return all(behavior in _IMMEDIATE for behavior in behaviors)


__all__ = ["should_return_immediately"]
