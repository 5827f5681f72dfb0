"""Typed events emitted during a run, and the listener protocol that receives them.

A listener is any object with ``on_event(event)``. Listener errors are logged and swallowed:
observing a run must never break it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol, runtime_checkable

from agentensemble.logging import get_logger
from agentensemble.outputs import EnsembleOutput, TaskOutput, TokenUsage, ToolCallRecord


@dataclass(frozen=True)
class EnsembleStarted:
    total_tasks: int


@dataclass(frozen=True)
class EnsembleCompleted:
    output: EnsembleOutput


@dataclass(frozen=True)
class TaskStarted:
    task_index: int
    total_tasks: int
    task_description: str
    agent_role: str


@dataclass(frozen=True)
class TaskCompleted:
    task_index: int
    total_tasks: int
    output: TaskOutput


@dataclass(frozen=True)
class TaskFailed:
    task_index: int
    total_tasks: int
    task_description: str
    error: BaseException


@dataclass(frozen=True)
class LLMCallCompleted:
    agent_role: str
    model: str
    duration: timedelta
    usage: TokenUsage
    tool_calls: int


@dataclass(frozen=True)
class ToolCallCompleted:
    agent_role: str
    task_description: str
    record: ToolCallRecord


@dataclass(frozen=True)
class ReviewRequested:
    timing: str
    task_description: str
    tool_name: str | None = None


@dataclass(frozen=True)
class ReviewDecided:
    timing: str
    task_description: str
    decision: str
    tool_name: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GuardrailChecked:
    """One guardrail ran: ``kind`` is "input" or "output"; ``attempt`` counts answers checked."""

    kind: str
    guardrail: str
    passed: bool
    task_description: str
    agent_role: str
    message: str | None = None
    attempt: int = 1


EnsembleEvent = (
    EnsembleStarted
    | EnsembleCompleted
    | TaskStarted
    | TaskCompleted
    | TaskFailed
    | LLMCallCompleted
    | ToolCallCompleted
    | ReviewRequested
    | ReviewDecided
    | GuardrailChecked
)


@runtime_checkable
class EnsembleListener(Protocol):
    """Receives every event of a run, in order, on the run's thread."""

    def on_event(self, event: EnsembleEvent) -> None: ...


class EventEmitter:
    """Delivers events to listeners; a failing listener is logged, never fatal."""

    def __init__(self, listeners: Sequence[EnsembleListener] = ()) -> None:
        self._listeners = list(listeners)
        self._log = get_logger()

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def emit(self, event: EnsembleEvent) -> None:
        for listener in self._listeners:
            try:
                listener.on_event(event)
            except Exception as exc:  # a listener must never break a run
                self._log.warning(
                    "listener failed", listener=type(listener).__name__, error=str(exc)
                )


__all__ = [
    "EnsembleCompleted",
    "EnsembleEvent",
    "EnsembleListener",
    "EnsembleStarted",
    "EventEmitter",
    "GuardrailChecked",
    "LLMCallCompleted",
    "ReviewDecided",
    "ReviewRequested",
    "TaskCompleted",
    "TaskFailed",
    "TaskStarted",
    "ToolCallCompleted",
]
