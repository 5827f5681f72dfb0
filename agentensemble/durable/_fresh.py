"""What a run's execution learns as it starts, in one read: a fork's record, and whether any
checkpoint of the run exists yet (a *fresh* execution skips DBOS's read before each step).

Before every step DBOS reads whether the step has a recorded output (a replay) and whether the
run was cancelled: a transaction of two queries, about a third of what a checkpoint costs. In
an execution that found no checkpoint of its run when it started, that read always comes back
empty: DBOS lets only the execution that owns a run write its checkpoints (each write checks
the run's owner token in its own transaction, the row locked), and an execution owns its run
before its code starts. So a fresh execution's steps skip the read, and nothing is lost:

- a completed step is still checkpointed before the run goes on, and an execution that starts
  after a crash finds those checkpoints and reads before every step, as DBOS does;
- an execution that lost its run (cancelled, taken over by another worker, resumed elsewhere)
  finds out when it writes its next checkpoint, which DBOS refuses, as it does today when the
  loss falls inside a step: at most the step then running is done in vain.

Only the steps of ``DBOSSteps.run_step`` skip the read (``skipping_read``); DBOS's own
operations (messages, events, child runs) read as usual.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agentensemble.durable import _dbos

# the run whose execution, in this context, started with no checkpoint of its run; a context
# variable, not a set of DBOS owner tokens: one token can be shared by several executions of a
# process (a recovery's), and a resumed run must never skip a read because a fresh one shares it
_fresh_run: ContextVar[str | None] = ContextVar("agentensemble_durable_fresh_run", default=None)
_skip_read: ContextVar[bool] = ContextVar("agentensemble_durable_skip_read", default=False)


async def read_run_start(workflow_id: str) -> tuple[dict[str, Any] | None, bool]:
    """The run's attributes (a fork's record lives there) and whether the run has no checkpoint
    yet, read outside its steps (not checkpointed, so its step numbers do not shift), in one
    statement."""
    return await asyncio.to_thread(_dbos.read_run_start, workflow_id)


@contextmanager
def fresh_execution(fresh: bool) -> Iterator[None]:
    """While the block runs, the current execution's steps skip DBOS's read (when ``fresh``)."""
    from dbos import DBOS

    workflow_id = DBOS.workflow_id if fresh else None
    if workflow_id is None:
        yield
        return
    reset = _fresh_run.set(workflow_id)
    try:
        yield
    finally:
        _fresh_run.reset(reset)


@contextmanager
def skipping_read(skip: bool = True) -> Iterator[None]:
    """Mark the DBOS step started in the block as one of ours (its read may be skipped);
    ``False`` inside a step's body, whose own DBOS calls read as usual."""
    reset = _skip_read.set(skip)
    try:
        yield
    finally:
        _skip_read.reset(reset)


def read_skipped(workflow_id: str | None = None) -> bool:
    """Whether a read of a step's checkpoint of ``workflow_id`` (default: the current run's)
    started here is skipped: one of our steps, in a fresh execution of that very run."""
    if not _skip_read.get():
        return False
    from dbos import DBOS

    current = DBOS.workflow_id
    fresh = _fresh_run.get()
    return current is not None and fresh == current and workflow_id in (None, current)


def install() -> None:
    """Make the launched DBOS skip the read for the steps of fresh executions (``_dbos.py``
    holds the hook); DBOS's other reads are untouched. Idempotent."""
    _dbos.skip_fresh_reads(read_skipped)


__all__ = ["fresh_execution", "install", "read_run_start", "read_skipped", "skipping_read"]
