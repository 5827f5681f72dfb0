"""Loop: a body of steps run in order, again and again, until ``until(state)`` says stop or
``max_iterations`` is reached. Every loop has a cap: an unbounded loop cannot be written.

Each iteration's body runs in a scope of its own: a body task's ``context`` naming another body
task gets that task's output of the same iteration. With ``feedback=True`` the first body step,
from the second iteration on, is shown its own previous output and the iteration's last output
(the critic's remarks) as revision feedback.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentensemble.errors import ConfigurationError, LoopMaxIterationsError, TaskExecutionError
from agentensemble.events import LoopIterationCompleted
from agentensemble.hints import reject_foreign_names
from agentensemble.outputs import LoopResult, TaskOutput
from agentensemble.workflows.step import (
    Feedback,
    Step,
    StepCall,
    StepResult,
    body_key,
    run_in_order,
    step_failure,
    step_kind,
)


@dataclass(frozen=True)
class LoopState:
    """What ``until`` sees after an iteration."""

    iteration: int
    """1-based."""
    outputs: dict[str, TaskOutput]
    """This iteration's outputs, by body step name."""
    last: TaskOutput | None
    """The body's last output this iteration."""
    history: list[dict[str, TaskOutput]] = field(default_factory=list)
    """Every iteration's outputs so far, this one last."""


def check_steps(steps: Sequence[Any], where: str) -> None:
    """ConfigurationError unless every item is a Task, Loop, Graph or Ensemble."""
    for position, step in enumerate(steps, start=1):
        if step_kind(step) is None:
            raise ConfigurationError(
                f"{where}: item {position} is a {type(step).__name__}; a step is a Task, a "
                "Loop, a Graph or an Ensemble"
            )


def check_cap(value: Any, name: str, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(
            f"{where}: {name} must be a whole number of at least 1, got {value!r} (every loop "
            "and graph has a cap)"
        )


class Loop(BaseModel):
    """Steps run in order, repeatedly, until ``until`` holds or ``max_iterations`` is reached."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)
    step_kind: ClassVar[str] = "loop"

    name: str
    body: list[Any] = Field(default_factory=list)
    until: Callable[[LoopState], bool] | None = None
    max_iterations: int = 5
    on_max_iterations: Literal["return_last", "fail"] = "return_last"
    feedback: bool = True
    context: list[Any] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _foreign_names(cls, data: Any) -> Any:
        return reject_foreign_names(cls, data)

    @model_validator(mode="after")
    def _structure(self) -> Loop:
        if not self.name.strip():
            raise ConfigurationError("Loop name must be a non-blank string")
        where = f"Loop {self.name!r}"
        check_cap(self.max_iterations, "max_iterations", where)
        if not self.body:
            raise ConfigurationError(f"{where} has an empty body: give it at least one step")
        check_steps(self.body, f"{where} body")
        check_steps(self.context, f"{where} context")
        seen: dict[str, int] = {}
        for position, step in enumerate(self.body, start=1):
            key = body_key(step)
            if key in seen:
                raise ConfigurationError(
                    f"{where}: body steps {seen[key]} and {position} share the name {key!r}; "
                    "the loop's outputs are keyed by name, so name body steps uniquely"
                )
            seen[key] = position
        if any(step is self for step in self.body):
            raise ConfigurationError(f"{where} holds itself in its body")
        return self

    @property
    def label(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"Loop({self.name!r}, body={len(self.body)}, max_iterations={self.max_iterations})"

    __str__ = __repr__


async def call_predicate(predicate: Callable[[Any], Any], state: Any) -> bool:
    """A user's ``until`` / ``when``, sync or async."""
    result = predicate(state)
    if inspect.isawaitable(result):
        result = await result
    return bool(result)


def predicate_name(predicate: Callable[..., Any] | None) -> str | None:
    """A predicate's name as events show it (``until`` / ``when``): its qualified name without
    the function it was defined in (``Policy.approved``, ``needs_more``, ``<lambda>``)."""
    if predicate is None:
        return None
    name = getattr(predicate, "__qualname__", None) or getattr(predicate, "__name__", None)
    return str(name).rsplit("<locals>.", 1)[-1] if name else type(predicate).__name__


def predicate_failure(what: str, error: Exception, source: Any, call: StepCall) -> Exception:
    """The run's error when a predicate raised: names it, keeps every completed output."""
    failure = TaskExecutionError(
        f"{what} raised {type(error).__name__}: {error}",
        task=source,
        completed_outputs=call.state.ordered()[0],
    )
    failure.__cause__ = error
    return step_failure(failure)


@dataclass
class LoopStep:
    """A prepared loop: its body's steps, prepared once, run each iteration."""

    loop: Loop
    body: list[Step]
    per_iteration: int = 0

    def __post_init__(self) -> None:
        self.per_iteration = sum(step.capacity for step in self.body)

    @property
    def source(self) -> Any:
        return self.loop

    @property
    def capacity(self) -> int:
        return self.per_iteration * self.loop.max_iterations

    async def run(self, call: StepCall) -> StepResult:
        loop = self.loop
        handed = tuple(call.scope.lookup_all(loop.context))
        history: list[dict[str, TaskOutput]] = []
        indices: list[int] = []
        feedback = call.feedback
        last: TaskOutput | None = None
        stopped_by: Literal["until", "max_iterations"] = "max_iterations"
        iteration = 0
        for iteration in range(1, loop.max_iterations + 1):
            scope = call.scope.child()
            base = call.base + (iteration - 1) * self.per_iteration
            context = (*call.context, *handed)
            within = (*call.within, f"loop:{loop.name}:{iteration}")
            result = await run_in_order(
                self.body,
                call.at(base, scope=scope, context=context, feedback=feedback, within=within),
            )
            indices += result.task_indices
            outputs = {
                body_key(step.source): found[-1]
                for step in self.body
                if (found := scope.finals.get(id(step.source)))
            }
            history.append(outputs)
            last = result.final or last
            if result.stop:  # a reviewer stopped the run: keep what ran, end here
                return StepResult(result.outputs, True, indices)
            done = False
            if loop.until is not None:
                state = LoopState(iteration, outputs, last, list(history))
                try:
                    done = await call_predicate(loop.until, state)
                except Exception as error:
                    raise predicate_failure(
                        f"Loop {loop.name!r}: until (after iteration {iteration})",
                        error,
                        loop,
                        call,
                    ) from error
            ending = "until" if done else None
            if ending is None and iteration == loop.max_iterations:
                ending = "max_iterations"
            call.env.emitter.emit(
                LoopIterationCompleted(
                    loop.name,
                    iteration,
                    outputs,
                    task_indices=tuple(result.task_indices),
                    stopped_by=ending,
                    within=call.within,
                    condition=predicate_name(loop.until),
                )
            )
            if done:
                stopped_by = "until"
                break
            first = scope.finals.get(id(self.body[0].source)) or []
            feedback = None
            if loop.feedback and last is not None:
                feedback = Feedback(previous=first[-1] if first else None, cause=last)
        call.state.loops[loop.name] = LoopResult(
            iterations=iteration, stopped_by=stopped_by, history=history
        )
        if stopped_by == "max_iterations" and loop.on_max_iterations == "fail" and loop.until:
            raise step_failure(
                LoopMaxIterationsError(
                    f"Loop {loop.name!r} reached max_iterations={loop.max_iterations} and its "
                    "until condition never held",
                    loop_name=loop.name,
                    iterations=iteration,
                    task=loop,
                    completed_outputs=call.state.ordered()[0],
                )
            )
        return StepResult([last] if last is not None else [], False, indices)


__all__ = ["Loop", "LoopState", "LoopStep", "call_predicate", "check_cap", "check_steps"]
