"""The sequential workflow: steps in list order, declared context threaded, review gates applied."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from agentensemble._base.interrupts import ends_the_run, keep_outputs
from agentensemble.errors import ExitEarlyError, ModelRefusalError, TaskExecutionError
from agentensemble.logging import get_logger
from agentensemble.outputs import EnsembleOutput, ExitReason
from agentensemble.workflows.base import PreparedTask  # re-exported: it used to live here
from agentensemble.workflows.step import (
    RunState,
    Step,
    StepCall,
    is_step_failure,
    run_in_order,
    step_label,
)

_log = get_logger()


def run_error(error: BaseException, step: Step, position: int, state: RunState) -> BaseException:
    """What a run raises when ``step`` (at ``position`` in the ensemble) failed with ``error``:
    a TaskExecutionError naming the task that failed and holding every completed output."""
    outputs, _ = state.ordered()
    if isinstance(error, TaskExecutionError) and is_step_failure(error):
        error.completed_outputs = outputs
        return error
    index, task = state.failed if state.failed is not None else (position, step.source)
    if isinstance(error, ModelRefusalError) and error.task is None:  # raised as itself
        error.task, error.completed_outputs = task, outputs
        error.args = (f"Task {index} ({step_label(task)!r}) failed: {error}",)
        return error
    wrapped = TaskExecutionError(
        f"Task {index} ({step_label(task)!r}) failed: {type(error).__name__}: {error}",
        task=task,
        completed_outputs=outputs,
    )
    wrapped.__cause__ = error
    return wrapped


def summary(
    state: RunState, started: float, finals: dict[int, Any] | None = None
) -> EnsembleOutput:
    """The run's output from its state: outputs in order, loops and graphs, exit reason.
    ``finals``: what each top-level step handed on (``Scope.finals``), for ``output_for``."""
    outputs, tasks = state.ordered()
    output = EnsembleOutput.from_tasks(
        outputs,
        exit_reason=state.exit_reason,
        total_duration=timedelta(seconds=time.perf_counter() - started),
        tasks=tasks,
    )
    if state.loops or state.graphs:
        output = output.model_copy(update={"loops": state.loops, "graphs": state.graphs})
        output._tasks = list(tasks)
    if finals is not None and (state.loops or state.graphs or len(outputs) != len(finals)):
        where = {id(out): position for position, out in enumerate(outputs)}
        output._steps = [
            (step, where[id(handed[-1])])
            for step, handed in finals.values()
            if handed and id(handed[-1]) in where
        ]
    return output


async def run_sequential(steps: Sequence[Step], call: StepCall) -> EnsembleOutput:
    """Run every step in order; raise TaskExecutionError holding all completed outputs."""
    started = time.perf_counter()
    state = call.state
    base = call.base
    for position, step in enumerate(steps, start=1):
        try:
            result = await step.run(call.at(base))
        except ExitEarlyError as stop:
            state.exit_reason = ExitReason.TIMEOUT if stop.timed_out else ExitReason.USER_EXIT_EARLY
            _log.info("run exited early", step=position, reason=stop.reason)
            break
        except BaseException as error:  # a nested run's TaskExecutionError is this task's too
            if ends_the_run(error):  # Ctrl-C, cancellation: what finished is kept on it
                keep_outputs(error, state.ordered()[0])
                raise
            failure = run_error(error, step, position, state)
            if failure is error:
                raise
            raise failure from error
        call.scope.record(step.source, result.outputs)
        base += step.capacity
        if result.stop:
            break
    return summary(state, started, call.scope.steps)


__all__ = ["PreparedTask", "RunState", "run_error", "run_in_order", "run_sequential", "summary"]
