"""Results of a run: what each task produced, what it cost, and why the run ended."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from enum import Enum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)

from agentensemble._saveable import jsonable, scrub


class _Saveable(BaseModel):
    """JSON output never fails: lone surrogates replaced (see ``agentensemble._saveable``)."""

    @model_serializer(mode="wrap", when_used="json")
    def _saveable_json(self, handler: SerializerFunctionWrapHandler) -> Any:
        return scrub(handler(self))


class ExitReason(str, Enum):
    """Why a run stopped."""

    COMPLETED = "completed"
    USER_EXIT_EARLY = "user_exit_early"
    TIMEOUT = "timeout"


class ReturnBehavior(str, Enum):
    """What happens to a tool's output: back to the model, or straight out as the task's result."""

    TO_LLM = "to_llm"
    IMMEDIATE = "immediate"
    IMMEDIATE_IF_LAST = "immediate_if_last"


class TokenUsage(BaseModel):
    """Tokens spent; adds up across calls, tasks and runs."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class ToolCallRecord(_Saveable):
    """One tool call as the model made it and as it ended."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    arguments: str = Field(
        description="the arguments the tool ran with: the model's JSON text, or after a "
        "reviewer's edit the edited arguments as canonical JSON"
    )
    model_arguments: str | None = Field(
        default=None,
        description="the model's own JSON text, kept only when a reviewer's edit changed it",
    )
    output: str
    is_success: bool
    duration: timedelta = timedelta(0)
    return_behavior: ReturnBehavior = ReturnBehavior.TO_LLM
    structured_output: Any = None

    @field_serializer("structured_output", when_used="json")
    def _structured_json(self, value: Any) -> Any:
        """Whatever a tool returned can be saved: unknown objects as their text."""
        return jsonable(value)


class TaskOutput(_Saveable):
    """What one task produced."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    raw: str
    parsed: Any | None = None
    task_description: str
    agent_role: str
    duration: timedelta = timedelta(0)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    llm_calls: int = 0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    returned_immediately: bool = False
    task_name: str | None = None


class EnsembleOutput(_Saveable):
    """What a whole run produced: every completed task's output, in order."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    raw: str
    task_outputs: list[TaskOutput]
    exit_reason: ExitReason = ExitReason.COMPLETED
    total_duration: timedelta = timedelta(0)
    total_tool_calls: int = 0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    tool_metrics: dict[str, Any] = Field(
        default_factory=dict, description="per-tool ToolMetrics of this run, by tool name"
    )

    @field_serializer("tool_metrics")
    def _metrics_counters(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """ToolMetrics are dataclasses holding a lock: dump their public counters only."""
        return {name: _public_fields(value) for name, value in metrics.items()}

    @classmethod
    def from_tasks(
        cls,
        outputs: list[TaskOutput],
        *,
        exit_reason: ExitReason,
        total_duration: timedelta,
    ) -> EnsembleOutput:
        """Build the summary of a run from its completed task outputs."""
        usage = TokenUsage()
        for output in outputs:
            usage = usage + output.usage
        return cls(
            raw=outputs[-1].raw if outputs else "",
            task_outputs=list(outputs),
            exit_reason=exit_reason,
            total_duration=total_duration,
            total_tool_calls=sum(len(o.tool_calls) for o in outputs),
            usage=usage,
        )


def _public_fields(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: getattr(value, f.name)
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    return value


__all__ = [
    "EnsembleOutput",
    "ExitReason",
    "ReturnBehavior",
    "TaskOutput",
    "TokenUsage",
    "ToolCallRecord",
]
