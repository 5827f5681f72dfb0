"""The parallel workflow: each task starts as soon as every task in its ``context`` completed.

Independent tasks run concurrently on the event loop (at most ``max_concurrency`` at once).
The outputs come back in the ensemble's task order, whatever order they completed in. The graph
was checked before any model call (no cycle, no context task outside the ensemble).

On a failure, ``FAIL_FAST`` cancels the running tasks — for real: a cancelled task's pending
model call is abandoned and none of its tools starts afterwards — and raises
``TaskExecutionError`` holding every completed output; ``CONTINUE_ON_ERROR`` lets independent
branches finish, skips what depends on a failed task and raises ``ParallelExecutionError``.
An ``ExitEarly`` from a reviewer or a tool stops the whole run the same way, keeping what
completed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from agentensemble._interrupts import (
    EscapedError,
    Interrupted,
    contained,
    keep_outputs,
    reraise_interrupt,
)
from agentensemble.errors import ExitEarlyError, ParallelExecutionError, TaskExecutionError
from agentensemble.events import TaskFailed
from agentensemble.execution.agent_executor import ExecutionEnv
from agentensemble.logging import get_logger
from agentensemble.outputs import EnsembleOutput, ExitReason, TaskOutput
from agentensemble.task import Task
from agentensemble.workflows import ParallelErrorStrategy
from agentensemble.workflows.base import PreparedTask
from agentensemble.workflows.graph import downstream_of
from agentensemble.workflows.sequential import RunState, _run_one

_log = get_logger()


class ParallelRunner:
    """Runs the task graph; one instance per run."""

    def __init__(
        self,
        max_concurrency: int | None = None,
        error_strategy: ParallelErrorStrategy = ParallelErrorStrategy.FAIL_FAST,
    ) -> None:
        self.max_concurrency = max_concurrency
        self.error_strategy = ParallelErrorStrategy(error_strategy)

    async def run(
        self, prepared: Sequence[PreparedTask], env: ExecutionEnv, inputs: Mapping[str, Any]
    ) -> EnsembleOutput:
        """Run the graph; raise TaskExecutionError / ParallelExecutionError on failures."""
        started = time.perf_counter()
        run = _GraphRun(prepared, env, inputs, self.max_concurrency or len(prepared))
        fail_fast = self.error_strategy is ParallelErrorStrategy.FAIL_FAST
        try:
            await run.until_done(fail_fast)
        except BaseException as stop:  # Ctrl-C or cancellation: what finished is kept on it
            await run.cancel_running()
            keep_outputs(stop, run.ordered_outputs()[0])
            raise
        finally:
            await run.cancel_running()
        outputs, tasks = run.ordered_outputs()
        if run.failures:
            raise run.error(fail_fast, outputs)
        return EnsembleOutput.from_tasks(
            outputs,
            exit_reason=run.stop or ExitReason.COMPLETED,
            total_duration=timedelta(seconds=time.perf_counter() - started),
            tasks=tasks,
        )


class _GraphRun:
    """The state of one parallel run: what waits, what runs, what failed or was skipped."""

    def __init__(
        self,
        prepared: Sequence[PreparedTask],
        env: ExecutionEnv,
        inputs: Mapping[str, Any],
        limit: int,
    ) -> None:
        self.prepared = list(prepared)
        self.env = env
        self.inputs = inputs
        self.limit = max(1, limit)
        self.state = RunState()
        self.index = {id(item.task): i for i, item in enumerate(self.prepared, start=1)}
        self.waiting = list(self.prepared)
        self.running: dict[asyncio.Task[bool], PreparedTask] = {}
        self.failures: dict[Task, BaseException] = {}
        self.skipped: list[Task] = []
        self.stop: ExitReason | None = None

    async def until_done(self, fail_fast: bool) -> None:
        while True:
            if self.stop is None and not (fail_fast and self.failures):
                self._start_ready()
            if not self.running:
                self._skip_blocked()
                return
            done, _ = await asyncio.wait(self.running, return_when=asyncio.FIRST_COMPLETED)
            for finished in sorted(done, key=lambda t: self.index[id(self.running[t].task)]):
                self._settle(finished, self.running.pop(finished))
            if self.stop is not None or (fail_fast and self.failures):
                return

    def _start_ready(self) -> None:
        for item in list(self.waiting):
            if len(self.running) >= self.limit:
                return
            if all(id(t) in self.state.by_task for t in item.task.context):
                self.waiting.remove(item)
                index = self.index[id(item.task)]
                coroutine = contained(
                    _run_one(item, index, len(self.prepared), self.env, self.inputs, self.state)
                )
                self.running[asyncio.ensure_future(coroutine)] = item

    def _settle(self, finished: asyncio.Task[bool], item: PreparedTask) -> None:
        index = self.index[id(item.task)]
        try:
            keep_going = finished.result()
        except Interrupted as carried:  # Ctrl-C raised by a tool or handler: the run stops
            reraise_interrupt(carried)
            raise
        except ExitEarlyError as stop:
            self.stop = ExitReason.TIMEOUT if stop.timed_out else ExitReason.USER_EXIT_EARLY
            _log.info("run exited early", task_index=index, reason=stop.reason)
        except Exception as caught:
            error = caught.error if isinstance(caught, EscapedError) else caught
            self.env.emitter.emit(TaskFailed(index, len(self.prepared), item.description, error))
            _log.error(
                "task failed", task_index=index, agent_role=item.agent_role, error=str(error)
            )
            self.failures[item.task] = error
            blocked = downstream_of(item.task, [i.task for i in self.waiting])
            self.skipped += blocked
            gone = {id(task) for task in blocked}
            self.waiting = [i for i in self.waiting if id(i.task) not in gone]
        else:
            if not keep_going:
                self.stop = self.state.exit_reason

    def _skip_blocked(self) -> None:
        """Tasks still waiting when nothing runs can never start (their input failed)."""
        self.skipped += [item.task for item in self.waiting]
        self.waiting = []

    async def cancel_running(self) -> None:
        """Cancel what still runs and wait until each task has really stopped."""
        if not self.running:
            return
        for task in self.running:
            task.cancel()
        await asyncio.wait(list(self.running))
        for finished, item in self.running.items():
            if not finished.cancelled() and finished.exception() is None:
                _log.info(
                    "task finished while being cancelled", task_index=self.index[id(item.task)]
                )
        self.running.clear()

    def ordered_outputs(self) -> tuple[list[TaskOutput], list[Task]]:
        """Completed outputs and their tasks, in the ensemble's task order."""
        done = [item.task for item in self.prepared if id(item.task) in self.state.by_task]
        return [self.state.by_task[id(task)] for task in done], done

    def error(self, fail_fast: bool, outputs: list[TaskOutput]) -> TaskExecutionError:
        failed = sorted(self.failures, key=lambda task: self.index[id(task)])
        first = failed[0]
        cause = self.failures[first]
        where = f"Task {self.index[id(first)]} ({first.label!r})"
        if fail_fast:
            error = TaskExecutionError(
                f"{where} failed: {type(cause).__name__}: {cause}",
                task=first,
                completed_outputs=outputs,
            )
        else:
            error = ParallelExecutionError(
                f"{len(failed)} task(s) failed, first {where}: {type(cause).__name__}: "
                f"{cause}; {len(outputs)} completed, {len(self.skipped)} skipped",
                completed_outputs=outputs,
                failures={task: self.failures[task] for task in failed},
                skipped=sorted(self.skipped, key=lambda task: self.index[id(task)]),
            )
        error.__cause__ = cause
        return error


__all__ = ["ParallelRunner"]
