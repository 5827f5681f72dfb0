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

# the run whose execution, in this context, started with no checkpoint of its run; a context
# variable, not a set of DBOS owner tokens: one token can be shared by several executions of a
# process (a recovery's), and a resumed run must never skip a read because a fresh one shares it
_fresh_run: ContextVar[str | None] = ContextVar("agentensemble_durable_fresh_run", default=None)
_skip_read: ContextVar[bool] = ContextVar("agentensemble_durable_skip_read", default=False)
_INSTALLED = "_agentensemble_fresh_check"
_START_STATEMENT = "_agentensemble_run_start"


async def read_run_start(workflow_id: str) -> tuple[dict[str, Any] | None, bool]:
    """The run's attributes (a fork's record lives there) and whether the run has no checkpoint
    yet, read outside its steps (not checkpointed, so its step numbers do not shift), in one
    statement."""
    from dbos._dbos import _get_dbos_instance

    sys_db = _get_dbos_instance()._sys_db
    return await asyncio.to_thread(_read, sys_db, workflow_id)


def _read(sys_db: Any, workflow_id: str) -> tuple[dict[str, Any] | None, bool]:
    import sqlalchemy as sa

    statement = _start_statement(sys_db)
    for attempt in range(3):
        try:
            with sys_db.engine.connect() as connection:
                row = connection.execute(statement, {"run_id": workflow_id}).first()
            if row is None:
                return None, True
            attributes, recorded = row
            return (attributes if isinstance(attributes, dict) else None), not recorded
        except sa.exc.DBAPIError as error:
            # a pooled connection the server dropped (pools are not pinged): once more, anew
            if not error.connection_invalidated or attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_statement(sys_db: Any) -> Any:
    """The run's attributes and whether any step of it is checkpointed, in one statement, built
    once per database (SQLAlchemy then reuses its compiled form without rebuilding it)."""
    built = getattr(sys_db, _START_STATEMENT, None)
    if built is None:
        import sqlalchemy as sa

        status, outputs = sys_db.tables.workflow_status, sys_db.tables.operation_outputs
        run_id = sa.bindparam("run_id", type_=status.c.workflow_uuid.type)
        recorded = sa.exists().where(outputs.c.workflow_uuid == run_id)
        built = sa.select(status.c.attributes, recorded).where(status.c.workflow_uuid == run_id)
        setattr(sys_db, _START_STATEMENT, built)
    return built


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


def read_skipped() -> bool:
    """Whether a read of a step's checkpoint started here would be skipped (``install``)."""
    if not _skip_read.get():
        return False
    from dbos._context import get_local_dbos_context

    context = get_local_dbos_context()
    return context is not None and _fresh_run.get() == context.workflow_id


def install(sys_db: Any) -> None:
    """Make ``sys_db`` (DBOS's system database of this process) skip the read for the steps
    of fresh executions; DBOS's other reads are untouched. Idempotent."""
    if getattr(sys_db, _INSTALLED, False):
        return
    from dbos._context import get_local_dbos_context

    original = sys_db.check_operation_execution

    def check_operation_execution(
        workflow_id: str, function_id: int, function_name: str, **options: Any
    ) -> Any:
        if _skip_read.get():
            context = get_local_dbos_context()
            if (
                context is not None
                and context.workflow_id == workflow_id
                and _fresh_run.get() == workflow_id
            ):
                return None
        return original(workflow_id, function_id, function_name, **options)

    sys_db.check_operation_execution = check_operation_execution
    setattr(sys_db, _INSTALLED, True)


__all__ = ["fresh_execution", "install", "read_run_start", "read_skipped", "skipping_read"]
