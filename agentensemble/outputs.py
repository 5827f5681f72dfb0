"""Results of a run: what each task produced, what it cost, and why the run ended."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_serializer,
    field_validator,
)

from agentensemble._base.deferred import DeferredField, resolved
from agentensemble._base.saveable import SaveableModel, jsonable
from agentensemble.run_metrics import TaskMetrics, TokenUsage, no_usage

if TYPE_CHECKING:
    from agentensemble.trace_model import ExecutionTrace

    _Trace: TypeAlias = ExecutionTrace | None
else:
    _Trace = Any  # the trace module is imported by the first run, not by ``import agentensemble``

T = TypeVar("T")


def _typed(value: Any, output_type: type[T]) -> T:
    """``value`` checked to be an ``output_type`` (strictly: no conversion), for typed code."""
    from pydantic import TypeAdapter  # pydantic.type_adapter: for typed reads only

    try:
        result: T = TypeAdapter(output_type).validate_python(value, strict=True)
    except ValidationError as error:
        raise TypeError(
            f"parsed value {type(value).__name__} is not a {output_type!r}: "
            f"{error.errors()[0]['msg']}"
        ) from error
    return result


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


class ToolCallRecord(SaveableModel):
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


class TaskOutput(SaveableModel):
    """What one task produced."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    raw: str
    parsed: Any | None = None
    task_description: str
    agent_role: str
    duration: timedelta = timedelta(0)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    llm_calls: int = 0
    usage: TokenUsage = Field(default_factory=no_usage)
    returned_immediately: bool = False
    task_name: str | None = None
    cost_usd: float | None = Field(
        default=None, description="USD from litellm's bundled prices; None if any model is unknown"
    )
    metrics: TaskMetrics = Field(default_factory=TaskMetrics)
    reasoning: str | None = Field(
        default=None,
        description="the last model turn's reasoning text (redacted), when the provider shows "
        "it; never passed to another task as context",
    )
    model: str | None = Field(
        default=None,
        description="the model that answered the task's last turn (a fallback chain's member "
        "that answered, not the chain)",
    )

    def parsed_as(self, output_type: type[T]) -> T:
        """``parsed`` with its precise type for a type checker: ``out.parsed_as(Report)``.

        Raises TypeError when the parsed value is not of that type (or the task had none).
        """
        return _typed(self.parsed, output_type)


class LoopResult(SaveableModel):
    """How a ``Loop`` ended: iterations run, why it stopped, each iteration's outputs by name."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    iterations: int
    stopped_by: Literal["until", "max_iterations"]
    history: list[dict[str, TaskOutput]] = Field(default_factory=list)


class GraphResult(SaveableModel):
    """How a ``Graph`` ended: the states in the order they ran, why it stopped, the latest
    output of each state."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    path: list[str]
    stopped_by: Literal["end", "max_steps"]
    outputs: dict[str, TaskOutput] = Field(default_factory=dict)


class EnsembleOutput(SaveableModel):
    """What a whole run produced: every completed task's output, in order."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    raw: str
    task_outputs: list[TaskOutput]
    exit_reason: ExitReason = ExitReason.COMPLETED
    total_duration: timedelta = timedelta(0)
    total_tool_calls: int = 0
    usage: TokenUsage = Field(default_factory=no_usage)
    tool_metrics: dict[str, Any] = Field(
        default_factory=dict, description="per-tool ToolMetrics of this run, by tool name"
    )
    run_id: str = Field(
        default="",
        description="the run's id (UUID4; a durable run's own id), also on its events and logs",
    )
    trace: _Trace = Field(
        default=None,
        description='None with capture="off"',
        repr=False,  # can be large; asyncio.run even reprs a run's result on the way out
    )
    cost_usd: float | None = Field(
        default=None, description="sum of the tasks' cost_usd; None if any is unknown"
    )
    loops: dict[str, LoopResult] = Field(
        default_factory=dict, description="each Loop that ended, by name (the last run of it)"
    )
    graphs: dict[str, GraphResult] = Field(
        default_factory=dict, description="each Graph that ended, by name (the last run of it)"
    )
    # costs of model calls no task output holds (a hierarchical manager's), for the run's total
    _extra_costs: list[float | None] = PrivateAttr(default_factory=list)

    @property
    def parsed(self) -> Any:
        """The last completed task's parsed value (None if it had no ``output_type``)."""
        return self.task_outputs[-1].parsed if self.task_outputs else None

    def parsed_as(self, output_type: type[T]) -> T:
        """``parsed`` with its precise type: ``output.parsed_as(list[Item])``."""
        return _typed(self.parsed, output_type)

    # the Task of each entry of task_outputs, by position: copies that replace task_outputs
    # (metrics, edits) keep the order, so a lookup always answers with the current output
    _tasks: list[Any] = PrivateAttr(default_factory=list)

    # a top-level Loop, Graph or nested Ensemble and the position of its final output
    _steps: list[tuple[Any, int]] = PrivateAttr(default_factory=list)

    def output_for(self, task: Any) -> TaskOutput | None:
        """The output of ``task`` (this very Task object) in this run; None if it did not run.

        For a Loop, a Graph or a nested Ensemble of the run's steps: its final output (what a
        later step's ``context`` got). A task run many times (in a loop): its last output."""
        for step, position in self._steps:
            if step is task and position < len(self.task_outputs):
                return self.task_outputs[position]
        found = None
        for known, output in zip(self._tasks, self.task_outputs, strict=False):
            if known is task:
                found = output
        return found

    def __getstate__(self) -> dict[Any, Any]:
        """A pickle holds what the run produced, not its definition: ``output_for`` finds a task
        by identity, which an unpickled copy shares with no task (and a task's agent, model,
        tools or guardrails may not pickle at all), so there it answers None."""
        state = super().__getstate__()
        private = state.get("__pydantic_private__")
        if private:
            state["__pydantic_private__"] = {**private, "_tasks": [], "_steps": []}
        return state

    def __eq__(self, other: object) -> bool:
        """Equal when what the runs produced is: the fields and the costs no task output holds.
        The run's definitions (what ``output_for`` looks up by identity) are not compared, so a
        pickled copy equals its original."""
        if not isinstance(other, EnsembleOutput):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and self.__pydantic_extra__ == other.__pydantic_extra__
            and self._extra_costs == other._extra_costs
        )

    __hash__ = None  # type: ignore[assignment]  # as before: its task_outputs list never hashed

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> EnsembleOutput:
        """A deep copy shares the run's own Task, Loop, Graph and Ensemble objects, so its
        ``output_for`` answers for the very same ones (copying them would copy agents, models
        and tools, which may refuse)."""
        memo = {} if memo is None else memo
        for task in self._tasks:
            memo[id(task)] = task
        for step, _ in self._steps:
            memo[id(step)] = step
        return super().__deepcopy__(memo)

    def __iter__(self) -> Any:
        """``dict(output)``: the trace made first, if the run left it to its first read."""
        self.trace  # noqa: B018 - the read stores it (DeferredField)
        return super().__iter__()

    @field_validator("trace", mode="before")
    @classmethod
    def _trace_model(cls, value: Any) -> Any:
        """A trace given as data (an EnsembleOutput loaded from JSON) becomes an ExecutionTrace."""
        value = resolved(value)  # an output re-validated as it is (revalidate_instances)
        if value is None or type(value).__name__ == "ExecutionTrace":
            return value
        from agentensemble.trace_model import ExecutionTrace

        return ExecutionTrace.model_validate(value)

    @field_serializer("trace", mode="wrap")
    def _made_trace(self, value: Any, handler: SerializerFunctionWrapHandler) -> Any:
        """A trace left to its first read (``_base/deferred.py``) dumps as the trace it makes; the
        dump's options (include, exclude, mode) apply to that trace as to any."""
        return handler(resolved(value))

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
        tasks: Sequence[Any] = (),
    ) -> EnsembleOutput:
        """Build the summary of a run from its completed task outputs (``tasks``: the Task of
        each output, in the same order, for ``output_for``)."""
        usage: TokenUsage | None = None
        for output in outputs:
            usage = output.usage if usage is None else usage + output.usage
        if usage is None:
            usage = no_usage()
        elif type(usage) is not TokenUsage:  # a subclass's: summed into a plain one, as ever
            usage = TokenUsage() + usage
        summary = cls(
            raw=outputs[-1].raw if outputs else "",
            task_outputs=list(outputs),
            exit_reason=exit_reason,
            total_duration=total_duration,
            total_tool_calls=sum(len(o.tool_calls) for o in outputs),
            usage=usage,
        )
        summary._tasks = list(tasks)
        return summary


# the trace may be left to its first read (tracing/recorder.py): see _base/deferred.py
type.__setattr__(EnsembleOutput, "trace", DeferredField("trace"))


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
    "GraphResult",
    "LoopResult",
    "ReturnBehavior",
    "TaskMetrics",
    "TaskOutput",
    "TokenUsage",
    "ToolCallRecord",
    "no_usage",
]
