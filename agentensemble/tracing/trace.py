"""The execution trace: everything a run did, as plain, versioned, JSON-round-trippable data.

Built by ``TraceRecorder`` from the run's events; users read it from ``EnsembleOutput.trace``
(or ``TaskExecutionError.trace``), save it, and load it back with ``ExecutionTrace.from_json``.
Secrets are redacted before anything enters a trace. Times are UTC; durations are seconds.
The JSON Schema lives in ``docs/trace.schema.json`` (a test keeps it in step with this module).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from agentensemble._saveable import SaveableModel
from agentensemble.outputs import TaskMetrics

#: Bumped whenever a field is removed or changes meaning; new optional fields keep the version.
SCHEMA_VERSION = 1

Capture = Literal["off", "standard", "full"]


class _Model(SaveableModel):  # saving never fails: odd objects and lone surrogates included
    model_config = ConfigDict(extra="forbid", defer_build=True)


class TokenCounts(_Model):
    """Tokens of one model call, as the provider reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ErrorInfo(_Model):
    """An error as data: its type name and (redacted) message."""

    type: str
    message: str


class RequestedToolCall(_Model):
    """A tool call as the model requested it (arguments verbatim, redacted)."""

    id: str
    name: str
    arguments: str


class ModelTurn(_Model):
    """One model call: what was sent (``messages`` only with capture="full"), what came back."""

    call_id: str
    model: str
    agent_role: str
    started_at: datetime
    latency_seconds: float = 0.0
    attempts: int = 1
    message_count: int = 0
    messages: list[dict[str, Any]] | None = None
    content: str | None = None
    tool_calls: list[RequestedToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: TokenCounts = Field(default_factory=TokenCounts)
    cost_usd: float | None = None
    error: ErrorInfo | None = None


class ToolCallTrace(_Model):
    """One tool call: arguments as run, output, success, duration, return behaviour."""

    call_id: str | None = None
    name: str
    arguments: str = Field(description="as run: after a reviewer's edit, the edited arguments")
    model_arguments: str | None = Field(
        default=None, description="the model's own arguments, when a reviewer's edit changed them"
    )
    started_at: datetime | None = None
    output: str | None = None
    is_success: bool | None = None
    duration_seconds: float = 0.0
    return_behavior: str | None = None


class ReviewTrace(_Model):
    """One review: what was asked, the decision, who decided and how long it took."""

    timing: str
    tool_name: str | None = None
    requested_at: datetime
    prompt: str | None = None
    output: str | None = None
    decision: str | None = None
    decided_by: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    wait_seconds: float | None = None


class DelegationTrace(_Model):
    """Work an agent (or the manager) handed to another agent, and how it ended."""

    from_role: str
    to_role: str
    instructions: str
    depth: int
    started_at: datetime
    duration_seconds: float | None = None
    output: str | None = None
    error: str | None = None


class EventRecord(_Model):
    """An event with no place of its own in the trace (a guardrail check, a newer event type):
    its type name, when it arrived and its fields (redacted, as JSON data)."""

    type: str
    at: datetime
    fields: dict[str, Any] = Field(default_factory=dict)


class GuardrailTrace(_Model):
    """One guardrail check: which, on the input or on which answer, and its verdict."""

    kind: Literal["input", "output"]
    guardrail: str
    passed: bool
    message: str | None = None
    attempt: int = 1
    checked_at: datetime


class TaskTrace(_Model):
    """One task: its agent, exact prompts, model turns, tool calls, reviews, outcome."""

    index: int
    description: str
    agent_role: str
    task_name: str | None = None
    model: str | None = None
    status: Literal["running", "completed", "failed"] = "running"
    started_at: datetime
    ended_at: datetime | None = None
    system_prompt: str | None = None
    user_prompt: str | None = None
    model_turns: list[ModelTurn] = Field(default_factory=list)
    tool_calls: list[ToolCallTrace] = Field(default_factory=list)
    reviews: list[ReviewTrace] = Field(default_factory=list)
    delegations: list[DelegationTrace] = Field(default_factory=list)
    events: list[EventRecord] = Field(default_factory=list)
    guardrails: list[GuardrailTrace] = Field(default_factory=list)
    output: str | None = None
    error: ErrorInfo | None = None
    usage: TokenCounts = Field(default_factory=TokenCounts)
    cost_usd: float | None = None
    metrics: TaskMetrics = Field(default_factory=TaskMetrics)


class ExecutionTrace(_Model):
    """A whole run. ``to_json()``/``from_json()`` round-trip exactly; ``save(path)`` writes it."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    parent_run_id: str | None = None
    capture: Capture = "standard"
    status: Literal["running", "completed", "failed"] = "running"
    started_at: datetime
    ended_at: datetime | None = None
    workflow: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    tasks: list[TaskTrace] = Field(default_factory=list)
    events: list[EventRecord] = Field(
        default_factory=list, description="events outside any task, with no place of their own"
    )
    exit_reason: str | None = None
    error: ErrorInfo | None = None
    usage: TokenCounts = Field(default_factory=TokenCounts)
    cost_usd: float | None = None

    def to_json(self, *, indent: int | None = None) -> str:
        """The trace as JSON text."""
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> ExecutionTrace:
        """Load a trace written by ``to_json``/``save``."""
        return cls.model_validate_json(text)

    def save(self, path: str | Path) -> Path:
        """Write the trace as indented JSON (UTF-8) and return the path."""
        target = Path(path)
        target.write_text(self.to_json(indent=2), encoding="utf-8")
        return target

    def task(self, index: int) -> TaskTrace:
        """The trace of task ``index`` (1-based, as in events)."""
        for task in self.tasks:
            if task.index == index:
                return task
        raise KeyError(f"no task {index} in this trace (tasks: {[t.index for t in self.tasks]})")


__all__ = [
    "SCHEMA_VERSION",
    "Capture",
    "DelegationTrace",
    "ErrorInfo",
    "EventRecord",
    "ExecutionTrace",
    "GuardrailTrace",
    "ModelTurn",
    "RequestedToolCall",
    "ReviewTrace",
    "TaskMetrics",
    "TaskTrace",
    "TokenCounts",
    "ToolCallTrace",
]
