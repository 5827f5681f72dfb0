"""Guardrails: checks on a task's input (before any model call) and output (before it is kept).

A guardrail is a callable, sync or async, that receives a ``GuardrailInput`` (input guardrails)
or the candidate ``TaskOutput`` (output guardrails) and returns ``GuardrailResult.success()`` or
``GuardrailResult.failure(message)``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import field
from typing import Any

from agentensemble._base.dataclass import dataclass
from agentensemble.outputs import TaskOutput


@dataclass(frozen=True)
class GuardrailResult:
    """The verdict of one guardrail: passed, or failed with a message saying why."""

    passed: bool
    message: str | None = None

    @classmethod
    def success(cls) -> GuardrailResult:
        return cls(passed=True)

    @classmethod
    def failure(cls, message: str) -> GuardrailResult:
        """A failure; ``message`` says what is wrong (an output guardrail's message is shown to
        the agent so it can correct its answer)."""
        if not isinstance(message, str) or not message.strip():
            raise ValueError("GuardrailResult.failure needs a message saying what is wrong")
        return cls(passed=False, message=message)


@dataclass(frozen=True)
class GuardrailInput:
    """What an input guardrail sees: the task as it is about to run."""

    description: str
    expected_output: str
    agent_role: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    context: tuple[str, ...] = ()  # raw outputs of the context tasks, in order


InputGuardrail = Callable[[GuardrailInput], "GuardrailResult | Awaitable[GuardrailResult]"]
OutputGuardrail = Callable[[TaskOutput], "GuardrailResult | Awaitable[GuardrailResult]"]


def guardrail_name(guardrail: Any) -> str:
    """The name a guardrail is reported by: its function name (or its class name)."""
    target = guardrail.func if isinstance(guardrail, functools.partial) else guardrail
    name = getattr(target, "__name__", None)
    return name if isinstance(name, str) else type(target).__name__


def check_guardrails(value: list[Any], field_name: str) -> list[Any]:
    """Every guardrail must be callable; the message names the offending entry."""
    for index, guardrail in enumerate(value):
        if not callable(guardrail):
            raise ValueError(
                f"{field_name}[{index}] must be a callable returning a GuardrailResult, "
                f"got {type(guardrail).__name__}"
            )
    return list(value)


__all__ = [
    "GuardrailInput",
    "GuardrailResult",
    "InputGuardrail",
    "OutputGuardrail",
    "check_guardrails",
    "guardrail_name",
]
