"""The parallel workflow: each step starts as soon as every step its ``context`` names completed.

Independent steps (tasks, loops, graphs, nested ensembles) run concurrently on the event loop
(at most ``max_concurrency`` at once). A loop or graph waits for every step named in a context
anywhere inside it. The outputs come back in the ensemble's step order, whatever order they
completed in. The order of work was checked before any model call (no cycle, no context step
outside the ensemble).

On a failure, ``FAIL_FAST`` cancels the running steps — for real: a cancelled task's pending
model call is abandoned and none of its tools starts afterwards — and raises
``TaskExecutionError`` holding every completed output; ``CONTINUE_ON_ERROR`` lets independent
branches finish, skips what depends on a failed step and raises ``ParallelExecutionError``.
An ``ExitEarly`` from a reviewer or a tool stops the whole run the same way, keeping what
completed.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Iterator, Mapping, Sequence
from itertools import filterfalse
from typing import Any

from agentensemble._base.interrupts import (
    EscapedError,
    Interrupted,
    contained,
    keep_outputs,
    reraise_interrupt,
)
from agentensemble.errors import ExitEarlyError, ParallelExecutionError, TaskExecutionError
from agentensemble.execution.agent_executor import ExecutionEnv
from agentensemble.logging import get_logger
from agentensemble.outputs import EnsembleOutput, ExitReason
from agentensemble.workflows import ParallelErrorStrategy
from agentensemble.workflows.base import PreparedRun, first_call
from agentensemble.workflows.context_graph import downstream_of
from agentensemble.workflows.sequential import run_error, summary
from agentensemble.workflows.step import (
    Step,
    StepCall,
    StepResult,
    is_step_failure,
    outside_deps,
    step_kind,
    step_label,
)

_log = get_logger()


class ParallelRunner:
    """Runs the steps' order of work; one instance per run."""

    def __init__(
        self,
        max_concurrency: int | None = None,
        error_strategy: ParallelErrorStrategy = ParallelErrorStrategy.FAIL_FAST,
    ) -> None:
        self.max_concurrency = max_concurrency
        self.error_strategy = ParallelErrorStrategy(error_strategy)

    async def run(
        self, prepared: PreparedRun, env: ExecutionEnv, inputs: Mapping[str, Any]
    ) -> EnsembleOutput:
        """Run the prepared run's steps (the ``WorkflowRunner`` method)."""
        return await self.run_steps(prepared.steps, first_call(prepared, env, inputs))

    async def run_steps(self, steps: Sequence[Step], call: StepCall) -> EnsembleOutput:
        """Run the steps; raise TaskExecutionError / ParallelExecutionError on failures."""
        started = time.perf_counter()
        fail_fast = self.error_strategy is ParallelErrorStrategy.FAIL_FAST
        run = StepsRun(steps, call, self.max_concurrency)
        await run.run(fail_fast)
        if run.failures:
            raise run.error(fail_fast)
        return summary(call.state, started, call.scope.steps)


class StepsRun:
    """The state of one parallel run of steps: what waits, what runs, what failed or was
    skipped. Also runs a nested PARALLEL ensemble's steps."""

    def __init__(self, steps: Sequence[Step], call: StepCall, limit: int | None) -> None:
        self.steps = list(steps)
        self.call = call
        self.limit = max(1, limit or len(self.steps))
        self.position = position = {id(step.source): i for i, step in enumerate(self.steps, 1)}
        self.base: dict[int, int] = {}
        base = call.base
        for step in self.steps:
            self.base[id(step.source)] = base
            base += step.capacity
        self.sources = {id(step.source): step.source for step in self.steps}
        self.deps = {id(step.source): _member_deps(step.source, position) for step in self.steps}
        self.waiting: dict[int, Step] = {id(step.source): step for step in self.steps}
        """The steps not started yet, in list order (by their source's identity)."""
        self._unmet: dict[int, Iterator[int]] = {}
        """Per waiting step, what is left to look at of its dependencies (latest first)."""
        self._watchers: dict[int, list[int]] = {}
        """Per dependency not recorded yet, the waiting steps that stopped at it."""
        self._ready: list[int] = []
        """Positions of the waiting steps whose dependencies are all recorded (a heap: they
        start in list order)."""
        for key in self.waiting:
            self._unmet[key] = iter(self.deps[key])
            self._wait_or_ready(key)
        self.running: dict[asyncio.Task[StepResult], Step] = {}
        self.failures: dict[Any, BaseException] = {}
        self.skipped: list[Any] = []
        self.stop: ExitReason | None = None
        self.results: dict[int, StepResult] = {}

    def deps_of(self, source: Any) -> list[Any]:
        """The steps of this run that ``source`` waits for."""
        sources = self.sources
        return [sources[key] for key in self.deps.get(id(source), ())]

    def _wait_or_ready(self, key: int) -> None:
        """Move the waiting step ``key`` on to its next dependency not recorded in the scope
        (one pass over each step's dependencies in a whole run, in C), or mark it ready.

        Dependencies are looked at latest first: a step of a chain waits on the one before it,
        and when that is recorded every earlier one is too."""
        missing = next(filterfalse(self.call.scope.finals.__contains__, self._unmet[key]), None)
        if missing is None:
            del self._unmet[key]
            heapq.heappush(self._ready, self.position[key])
        else:
            self._watchers.setdefault(missing, []).append(key)

    def _recorded(self, source: Any) -> None:
        """``source`` was recorded: the steps that waited on it look further."""
        for key in self._watchers.pop(id(source), ()):
            if key in self.waiting:
                self._wait_or_ready(key)

    async def run(self, fail_fast: bool) -> None:
        try:
            await self._until_done(fail_fast)
        except BaseException as stop:  # Ctrl-C or cancellation: what finished is kept on it
            await self._cancel_running()
            keep_outputs(stop, self.call.state.ordered()[0])
            raise
        finally:
            await self._cancel_running()
        if self.stop is not None:
            self.call.state.exit_reason = self.stop

    async def _until_done(self, fail_fast: bool) -> None:
        while True:
            if self.stop is None and not (fail_fast and self.failures):
                self._start_ready()
            if not self.running:
                self.skipped += [step.source for step in self.waiting.values()]  # input failed
                self.waiting = {}
                return
            done, _ = await asyncio.wait(self.running, return_when=asyncio.FIRST_COMPLETED)
            for finished in sorted(done, key=lambda t: self.position[id(self.running[t].source)]):
                self._settle(finished, self.running.pop(finished))
            if self.stop is not None or (fail_fast and self.failures):
                return

    def _start_ready(self) -> None:
        ready = self._ready
        while ready and len(self.running) < self.limit:
            step = self.steps[heapq.heappop(ready) - 1]
            key = id(step.source)
            if self.waiting.pop(key, None) is None:
                continue  # skipped meanwhile: an input failed
            coroutine = contained(step.run(self.call.at(self.base[key])))
            self.running[asyncio.ensure_future(coroutine)] = step

    def _settle(self, finished: asyncio.Task[StepResult], step: Step) -> None:
        try:
            result = finished.result()
        except Interrupted as carried:  # Ctrl-C raised by a tool or handler: the run stops
            reraise_interrupt(carried)
            raise
        except ExitEarlyError as stop:
            self.stop = ExitReason.TIMEOUT if stop.timed_out else ExitReason.USER_EXIT_EARLY
            _log.info("run exited early", step=self.position[id(step.source)], reason=stop.reason)
        except Exception as caught:
            error = caught.error if isinstance(caught, EscapedError) else caught
            self.failures[step.source] = error
            sources = [s.source for s in self.waiting.values()]
            blocked = downstream_of(step.source, sources, self.deps_of)
            self.skipped += blocked
            for source in blocked:
                del self.waiting[id(source)]
        else:
            self.call.scope.record(step.source, result.outputs)
            self._recorded(step.source)
            self.results[id(step.source)] = result
            if result.stop:
                self.stop = self.call.state.exit_reason

    async def _cancel_running(self) -> None:
        """Cancel what still runs and wait until each step has really stopped."""
        if not self.running:
            return
        for task in self.running:
            task.cancel()
        await asyncio.wait(list(self.running))
        for finished, step in self.running.items():
            if not finished.cancelled() and finished.exception() is None:
                _log.info(
                    "step finished while being cancelled", step=self.position[id(step.source)]
                )
        self.running.clear()

    def last_result(self) -> StepResult:
        """The outputs of the last step (in list order) that completed: a nested ensemble's."""
        indices: list[int] = []
        last: list[Any] = []
        for step in self.steps:
            result = self.results.get(id(step.source))
            if result is not None:
                indices += result.task_indices
                last = result.outputs or last
        return StepResult(last, self.stop is not None, indices)

    def first_failure(self) -> tuple[Step, BaseException]:
        failed = sorted(self.failures, key=lambda source: self.position[id(source)])[0]
        step = next(step for step in self.steps if step.source is failed)
        return step, self.failures[failed]

    def error(self, fail_fast: bool) -> BaseException:
        step, cause = self.first_failure()
        position = self.position[id(step.source)]
        state = self.call.state
        if fail_fast or is_step_failure(cause):
            error = run_error(cause, step, position, state)
            if step_kind(step.source) == "task" and error is not cause:
                error = TaskExecutionError(
                    f"Task {position} ({step_label(step.source)!r}) failed: "
                    f"{type(cause).__name__}: {cause}",
                    task=step.source,
                    completed_outputs=state.ordered()[0],
                )
            if error is not cause:
                error.__cause__ = cause
            return error
        failed = sorted(self.failures, key=lambda source: self.position[id(source)])
        outputs = state.ordered()[0]
        error = ParallelExecutionError(
            f"{len(failed)} task(s) failed, first Task {position} "
            f"({step_label(step.source)!r}): {type(cause).__name__}: {cause}; "
            f"{len(outputs)} completed, {len(self.skipped)} skipped",
            completed_outputs=outputs,
            failures={source: self.failures[source] for source in failed},
            skipped=sorted(self.skipped, key=lambda source: self.position[id(source)]),
        )
        error.__cause__ = cause
        return error


def _member_deps(source: Any, position: dict[int, int]) -> list[int]:
    """The ids of the steps of this run that ``source`` waits for (named in a context in it),
    once each, latest in the list first; never ``source`` itself. Made in C from the context
    lists: no Python work per context link."""
    named = source.context if step_kind(source) == "task" else outside_deps(source)
    ids = position.keys() & set(map(id, named))
    ids.discard(id(source))
    return sorted(ids, key=position.__getitem__, reverse=True)


__all__ = ["ParallelRunner", "StepsRun"]
