"""Who is running right now: the run id, the task and the model call, held in context variables.

A run binds its ``run_id`` here (and into structlog's context variables, so every log line of
the run carries ``run_id=...``). Context variables follow asyncio tasks and are copied into the
worker threads that run sync tools, so concurrent runs each see their own id and nested work
(tools, nested ensembles) sees the id of the run it belongs to. Events read these values when
they are built, which is how an event knows its run and task without any plumbing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import structlog


@dataclass(frozen=True)
class ModelCallScope:
    """The model call in progress: who asked, for which task, under which call id."""

    agent_role: str
    task_name: str | None
    call_id: str


_run_id: ContextVar[str | None] = ContextVar("agentensemble_run_id", default=None)
_task_index: ContextVar[int | None] = ContextVar("agentensemble_task_index", default=None)
_model_call: ContextVar[ModelCallScope | None] = ContextVar(
    "agentensemble_model_call", default=None
)


# the version (4) and variant (RFC 4122) bits of a random UUID, as uuid.uuid4() sets them
_UUID4_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID4_SET = (0x8000 << 48) | (4 << 76)


def new_id_hex() -> str:
    """A fresh random UUID4 as 32 hex digits (``uuid.uuid4().hex``, at a third of its cost: a
    run makes one per model call)."""
    return f"{(int.from_bytes(os.urandom(16), 'big') & _UUID4_CLEAR) | _UUID4_SET:032x}"


def new_run_id() -> str:
    """A fresh run id: a UUID4 as a string (``str(uuid.uuid4())``)."""
    h = new_id_hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def current_run_id() -> str:
    """The id of the run this code belongs to, or ``""`` outside any run."""
    return _run_id.get() or ""


def current_task_index() -> int | None:
    """The 1-based index of the task this code belongs to (set when ``TaskStarted`` is
    emitted), or None outside a task."""
    return _task_index.get()


def current_model_call() -> ModelCallScope | None:
    """The model call in progress in this context, if any."""
    return _model_call.get()


@contextmanager
def run_scope(run_id: str) -> Iterator[str | None]:
    """Bind ``run_id`` for the block: to our context variable and to structlog's.

    Yields the id of the enclosing run (a nested ensemble run from a tool), or None. The task
    index is cleared inside, so a nested run's events never claim the outer run's task.
    """
    parent = _run_id.get()
    run_token = _run_id.set(run_id)
    task_token = _task_index.set(None)
    call_token = _model_call.set(None)
    # bind/reset by token: bound_contextvars reads every context variable first (twice the cost)
    log_tokens = structlog.contextvars.bind_contextvars(run_id=run_id)
    try:
        yield parent
    finally:
        structlog.contextvars.reset_contextvars(**log_tokens)
        _model_call.reset(call_token)
        _task_index.reset(task_token)
        _run_id.reset(run_token)


def enter_task(index: int) -> None:
    """Mark the current context as working on task ``index`` (until the next task starts).

    Called when ``TaskStarted`` is emitted; asyncio tasks and worker threads started after it
    inherit the index.
    """
    _task_index.set(index)


@contextmanager
def model_call_scope(agent_role: str, task_name: str | None, call_id: str) -> Iterator[None]:
    """Mark the block as one model call (streamed token deltas are attributed to it)."""
    token = _model_call.set(ModelCallScope(agent_role, task_name, call_id))
    try:
        yield
    finally:
        _model_call.reset(token)


__all__ = [
    "ModelCallScope",
    "current_model_call",
    "current_run_id",
    "current_task_index",
    "enter_task",
    "model_call_scope",
    "new_id_hex",
    "new_run_id",
    "run_scope",
]
