"""Model turns, tool calls and review decisions as DBOS steps, numbered per task.

Inside a durable run every ``as_step`` call becomes ``DBOS.run_step_async``: its result is
checkpointed before the run goes on, and a recovered run gets the checkpoint back instead of
calling again. DBOS finds a checkpoint by the step's number, which it hands out in the order
steps start. Tasks running at once (parallel and graph workflows) start their steps in an order
no replay can promise, so each task numbers its own steps in a range of its own: task ``i``
counts from ``i * 2**20``. Within a task, model turns follow each other and the tool calls of
one turn start in call order, so the numbers are the same on every replay, whatever order the
tasks resume in. A step that asks for a number whose checkpoint has another name is a change
of code since the run started: ``DurableDivergenceError``.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import pickle
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentensemble.errors import AgentEnsembleError, ConfigurationError
from agentensemble.logging import get_logger
from agentensemble.run_context import current_task_index
from agentensemble.steps import StepKind

T = TypeVar("T")
_log = get_logger()

TASK_RANGE_BITS = 20  # steps per task: 2**20; the run's own (task-less) steps count from 1
MAX_TASKS = 2047  # step numbers are 32-bit on Postgres: task 2047 ends at 2**31 - 1
_RANGE = 1 << TASK_RANGE_BITS


class DurableDivergenceError(AgentEnsembleError):
    """A recovered run asked for a different step than its checkpoints hold.

    The code changed between the crash and the recovery (another model, other tools, another
    task order): mixing old checkpoints with new code would give an answer nobody asked for.
    """


@dataclass
class _RunSteps:
    """The step counters of one durable run: the run's own DBOS context, one per task."""

    root: Any  # the workflow's DBOSContext
    tasks: dict[int, Any] = field(default_factory=dict)
    reviews_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    created_at: int | None = None  # the run's creation time, read once for its review keys

    def context_for(self, task: int) -> Any:
        found = self.tasks.get(task)
        if found is None:
            if not 1 <= task <= MAX_TASKS:
                raise ConfigurationError(
                    f"a durable run numbers each task's steps apart and holds at most "
                    f"{MAX_TASKS} tasks; task {task} is beyond that"
                )
            found = copy.copy(self.root)  # same workflow, same owner; its own step counter
            found.function_id = task * _RANGE
            found.curr_step_function_id = -1
            found.context_spans = list(self.root.context_spans)
            self.tasks[task] = found
        if found.function_id >= (task + 1) * _RANGE - 8:
            raise ConfigurationError(
                f"task {task} of durable run {found.workflow_id!r} took more than "
                f"{_RANGE - 8} steps; a durable task is bounded to that many"
            )
        return found


_run_steps: ContextVar[_RunSteps | None] = ContextVar("agentensemble_durable_steps", default=None)


@contextmanager
def numbering_per_task() -> Iterator[None]:
    """Inside a durable run's workflow: number each task's steps in its own range."""
    from dbos._context import get_local_dbos_context

    root = get_local_dbos_context()
    if root is None or not root.is_workflow():
        raise ConfigurationError("numbering_per_task() belongs inside a DBOS workflow")
    token = _run_steps.set(_RunSteps(root))
    try:
        yield
    finally:
        _run_steps.reset(token)


@contextmanager
def _in_task_range() -> Iterator[None]:
    """Make the DBOS operations of the block count in the current task's range."""
    from dbos._context import _dbos_context_var

    steps = _run_steps.get()
    task = current_task_index()
    if steps is None or task is None:
        yield
        return
    token = _dbos_context_var.set(steps.context_for(task))
    try:
        yield
    finally:
        _dbos_context_var.reset(token)


def reviews_lock() -> asyncio.Lock | None:
    """The lock a run's reviews hold to update the run's list of reviews (None: no durable run)."""
    steps = _run_steps.get()
    return None if steps is None else steps.reviews_lock


class DBOSSteps:
    """The step runner of durable runs: every step goes through DBOS."""

    async def run_step(
        self, kind: StepKind, name: str, call: Callable[[], Awaitable[T]], *, durable_itself: bool
    ) -> T:
        from dbos import DBOS
        from dbos._error import DBOSUnexpectedStepError

        if DBOS.workflow_id is None or DBOS.step_id is not None:
            # outside a durable run, or a step inside a step (its work is checkpointed with it)
            return await call()
        if durable_itself:  # a call that checkpoints itself, in its task's range
            with _in_task_range():
                return await call()

        task = current_task_index()
        if task is not None:
            name = f"task{task}:{name}"

        async def step() -> Any:
            return checkpointable(await call(), name)

        try:
            with _in_task_range():  # DBOS numbers the step as it starts, in this task's range
                result: T = await DBOS.run_step_async({"name": name}, step)
        except DBOSUnexpectedStepError as error:
            raise DurableDivergenceError(
                f"run {DBOS.workflow_id!r} diverged from its checkpoints at {kind} step "
                f"{name!r}: {error}. The code that recovers a run must make the same model, "
                "tool and review calls in the same order as the code that started it; finish "
                "or cancel runs before deploying such a change"
            ) from None
        return result

    def step_key(self) -> str | None:
        """What the current step asks (a review), named the same when a recovery re-runs it.

        ``<run id>:<run created at>:<step's function id>.<n>``: the n-th key asked in this
        execution of the step. The run's creation time (kept in the database) tells apart two
        runs given the same id in two databases that share one review server.
        """
        from agentensemble.durable._step_keys import durable_step_key

        return durable_step_key(_run_steps.get())


def checkpointable(value: T, step: str) -> T:
    """``value`` as DBOS can checkpoint it (pickle). A step's side effect has happened by now:
    a tool's ``structured_output`` that cannot be pickled (a lock, a connection, a generator)
    must not fail the run, which would do the effect again on retry. Each field that cannot be
    pickled is replaced by its JSON form (``repr`` for what JSON cannot hold), in this run and in
    every replay alike."""
    try:
        pickle.dumps(value)
    except Exception as error:
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            _log.warning(
                "step %s: its result cannot be checkpointed (%s); kept as text", step, error
            )
            return _plain(value)  # type: ignore[no-any-return]
        changes = {}
        for item in dataclasses.fields(value):
            current = getattr(value, item.name)
            if not _pickles(current):
                changes[item.name] = checkpointable(current, step)
        _log.warning(
            "step result cannot be checkpointed; kept as plain JSON",
            step=step,
            fields=", ".join(changes) or "its result",
            error=str(error),
        )
        return dataclasses.replace(value, **changes)
    return value


def _pickles(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


def _plain(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=repr))
    except (TypeError, ValueError, RecursionError):
        return repr(value)


__all__ = ["DBOSSteps", "DurableDivergenceError", "numbering_per_task", "reviews_lock"]
