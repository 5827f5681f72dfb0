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

Calls of one model turn that make steps of their own (delegations, approvals that wait in the
run) run at once, each a *branch* numbering its steps in a range of its own: the turn reserves
the branches' ranges from its task's (or its branch's) counter when it starts, in call order,
so every replay hands each branch the same numbers, whatever order the branches run in
(``DBOSSteps.branches``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import pickle
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentensemble.attachments import keeping_bytes
from agentensemble.durable import _dbos
from agentensemble.durable._fresh import skipping_read
from agentensemble.durable._kept import keeping_for
from agentensemble.durable._step_keys import durable_step_key, step_execution
from agentensemble.errors import AgentEnsembleError, ConfigurationError
from agentensemble.logging import get_logger
from agentensemble.run_context import current_task_index
from agentensemble.steps import StepKind

T = TypeVar("T")
_log = get_logger()

TASK_RANGE_BITS = 20  # steps per task: 2**20; the run's own (task-less) steps count from 1
MAX_TASKS = 2047  # step numbers are 32-bit on Postgres: task 2047 ends at 2**31 - 1
_RANGE = 1 << TASK_RANGE_BITS
_MARGIN = 8  # numbers kept free at the end of a range (a step may reserve a second one)
MIN_BRANCH_STEPS = 64  # a branch smaller than this would fail on its first delegation


class DurableDivergenceError(AgentEnsembleError):
    """A recovered run asked for a different step than its checkpoints hold.

    The code changed between the crash and the recovery (another model, other tools, another
    task order): mixing old checkpoints with new code would give an answer nobody asked for.
    """


@dataclass
class _Branch:
    """One concurrent call's own step counter (a DBOS context copy) and where its range ends."""

    task: int | None
    context: Any
    end: int  # exclusive


_branch: ContextVar[_Branch | None] = ContextVar("agentensemble_durable_branch", default=None)


@dataclass
class _RunSteps:
    """The step counters of one durable run: the run's own DBOS context, one per task."""

    root: Any  # the workflow's DBOSContext
    tasks: dict[int, Any] = field(default_factory=dict)
    reviews_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    created_at: int | None = None  # the run's creation time, read once for its review keys
    edits: dict[int, str] = field(default_factory=dict)  # a fork's edited outputs, by task

    def context_for(self, task: int) -> Any:
        found = self.tasks.get(task)
        if found is None:
            if not 1 <= task <= MAX_TASKS:
                raise ConfigurationError(
                    f"a durable run numbers each task's steps apart and holds at most "
                    f"{MAX_TASKS} tasks; task {task} is beyond that"
                )
            # same workflow, same owner; its own step counter
            found = _dbos.counter_from(self.root, task * _RANGE)
            self.tasks[task] = found
        if _dbos.counter_last(found) >= (task + 1) * _RANGE - _MARGIN:
            raise ConfigurationError(
                f"task {task} of durable run {_dbos.counter_run_id(found)!r} took more than "
                f"{_RANGE - _MARGIN} steps; a durable task is bounded to that many"
            )
        return found

    def current(self, task: int | None) -> tuple[Any, int]:
        """The counter the current code numbers its steps with, and its range's end: the
        branch it runs in, else its task's (else the run's own)."""
        branch = _branch.get()
        if branch is not None and branch.task == task:
            if _dbos.counter_last(branch.context) >= branch.end - _MARGIN:
                raise ConfigurationError(
                    f"a concurrent call of durable run {_dbos.counter_run_id(branch.context)!r} "
                    f"took more than its {branch.end - _dbos.counter_last(branch.context)} "
                    "remaining steps "
                    "(a branch's range is a share of its task's); make fewer calls at once or "
                    "fewer steps inside one call"
                )
            return branch.context, branch.end
        if task is None:
            return self.root, _RANGE
        return self.context_for(task), (task + 1) * _RANGE


_run_steps: ContextVar[_RunSteps | None] = ContextVar("agentensemble_durable_steps", default=None)


@contextmanager
def numbering_per_task(edits: dict[int, str] | None = None) -> Iterator[None]:
    """Inside a durable run's workflow: number each task's steps in its own range.

    ``edits``: outputs that replace tasks' own (a fork's edited output), by 1-based task."""
    root = _dbos.workflow_context()
    if root is None:
        raise ConfigurationError("numbering_per_task() belongs inside a DBOS workflow")
    token = _run_steps.set(_RunSteps(root, edits=dict(edits or {})))
    try:
        yield
    finally:
        _run_steps.reset(token)


@contextmanager
def _in_task_range() -> Iterator[None]:
    """Make the DBOS operations of the block count in the current task's range."""
    steps = _run_steps.get()
    task = current_task_index()
    if steps is None or (task is None and _branch.get() is None):
        yield
        return
    with _dbos.counting_with(steps.current(task)[0]):
        yield


def branch_ranges(count: int) -> list[_Branch] | None:
    """Reserve ``count`` ranges of step numbers from the current counter, one per concurrent
    call, in call order (None outside a durable run).

    Each gets a sixty-fourth of what is left of the current range (a turn of more than 32
    calls shares half of it), so later turns and nested branches keep room: a task holds about
    175 turns of two concurrent calls, each branch starting with 16,383 steps. The
    reservation moves the counter past them, as if the calls' steps had run in order.
    """
    steps = _run_steps.get()
    if steps is None or count < 1:
        return None
    task = current_task_index()
    context, end = steps.current(task)
    start = _dbos.counter_last(context) + 1
    left = end - _MARGIN - start
    size = left // max(64, 2 * count)
    if size < MIN_BRANCH_STEPS:
        raise ConfigurationError(
            f"durable run {_dbos.counter_run_id(context)!r} has no room left for {count} "
            f"concurrent calls ({left} step numbers left where they start); make fewer calls at "
            "once, or fewer nested concurrent calls"
        )
    branches = []
    for index in range(count):
        copied = _dbos.counter_from(context, start + index * size - 1)
        branches.append(_Branch(task, copied, start + (index + 1) * size))
    _dbos.move_counter(context, start + count * size - 1)
    return branches


@contextmanager
def _in_branch(branch: _Branch) -> Iterator[None]:
    token = _branch.set(branch)
    try:
        yield
    finally:
        _branch.reset(token)


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
        from dbos import error as dbos_error

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
            # the body's own DBOS calls read as usual; its reviews count their keys afresh in
            # each execution of the step (a retry, a recovery); it pickles attachments whole
            # (only DBOS's checkpoint of its result keeps them apart)
            with skipping_read(False), step_execution(), keeping_bytes(None):
                return checkpointable(await call(), name)

        try:
            # DBOS numbers the step as it starts, in this task's range; a fresh execution
            # skips its read of the step's checkpoint (_fresh.py); attachments in its result are
            # checkpointed by digest, their bytes kept once in our table (_kept.py)
            with _in_task_range(), skipping_read(), keeping_for(DBOS.workflow_id):
                result: T = await DBOS.run_step_async({"name": name}, step)
        except dbos_error.DBOSUnexpectedStepError as error:
            raise DurableDivergenceError(
                f"run {DBOS.workflow_id!r} diverged from its checkpoints at {kind} step "
                f"{name!r}: {error}. The code that recovers a run must make the same model, "
                "tool and review calls in the same order as the code that started it; finish "
                "or cancel runs before deploying such a change"
            ) from None
        return result

    def branches(self, count: int) -> list[AbstractContextManager[None]] | None:
        """``count`` scopes, one per concurrent call of a turn, each numbering the steps run
        inside it in a range of its own (reserved now, in call order); None outside a durable
        run's workflow, or inside a step (its calls are checkpointed with it)."""
        from dbos import DBOS

        if DBOS.workflow_id is None or DBOS.step_id is not None:
            return None
        found = branch_ranges(count)
        return None if found is None else [_in_branch(branch) for branch in found]

    def replaced_output(self) -> str | None:
        """The fork's edited output for the current task, if any; None inside a step or a
        branch (a delegated agent's, a tool's work is not the task's output)."""
        from dbos import DBOS

        steps, task = _run_steps.get(), current_task_index()
        if steps is None or task is None or DBOS.step_id is not None or _branch.get() is not None:
            return None
        return steps.edits.get(task)

    def step_key(self) -> str | None:
        """What the current step asks (a review), named the same when a recovery re-runs it.

        ``<run id>:<run created at>:<step's function id>.<n>``: the n-th key asked in this
        execution of the step. The run's creation time (kept in the database) tells apart two
        runs given the same id in two databases that share one review server.
        """
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


__all__ = [
    "DBOSSteps",
    "DurableDivergenceError",
    "branch_ranges",
    "numbering_per_task",
    "reviews_lock",
]
