"""Who is running right now: the run id, the task and the model call, held in context variables.

A run binds its ``run_id`` here (and into structlog's context variables, so every log line of
the run carries ``run_id=...``). Context variables follow asyncio tasks and are copied into the
worker threads that run sync tools, so concurrent runs each see their own id and nested work
(tools, nested ensembles) sees the id of the run it belongs to. Events read these values when
they are built, which is how an event knows its run and task without any plumbing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from functools import partial
from typing import Any

import structlog

from agentensemble._base.dataclass import dataclass


@dataclass(slots=True)
class ModelCallScope:
    """The model call in progress: who asked, for which task, under which call id."""

    agent_role: str
    task_name: str | None
    call_id: str


@dataclass(frozen=True)
class RunContext:
    """What an agent's ``instructions`` function is given at each task start: the run's inputs,
    its session (None outside one), the task and the agent working on it."""

    inputs: Mapping[str, Any]
    session: str | None
    task_name: str | None
    task_description: str
    agent_role: str
    run_id: str


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


# the id a top-level run started in this context takes instead of a fresh one (a durable run's
# own id, so its output, events, logs and trace carry the id its caller chose)
_named_run: ContextVar[str | None] = ContextVar("agentensemble_named_run", default=None)


def new_run_id() -> str:
    """A fresh run id: a UUID4 as a string (``str(uuid.uuid4())``); for a top-level run inside
    ``naming_run(run_id)``, that id (a run nested in it still gets a fresh one)."""
    named = _named_run.get()
    if named is not None and _run_id.get() is None:
        return named
    h = new_id_hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class naming_run:
    """The top-level run started inside the block takes ``run_id`` as its id (a durable run's)."""

    __slots__ = ("_run_id", "_token")

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id

    def __enter__(self) -> None:
        self._token = _named_run.set(self._run_id)

    def __exit__(self, *_: object) -> None:
        _named_run.reset(self._token)


def current_run_id() -> str:
    """The id of the run this code belongs to, or ``""`` outside any run."""
    return _run_id.get() or ""


def current_task_index() -> int | None:
    """The 1-based index of the task this code belongs to (set when ``TaskStarted`` is
    emitted), or None outside a task."""
    return _task_index.get()


# ``current_run_id`` and ``current_task_index`` as C calls, for the events' default factories:
# a run builds ten events or more, each reading both, and a Python function per read cost more
# than the read. A run id is never bound empty or None, so ``get("")`` answers as
# ``current_run_id`` does.
read_run_id = partial(_run_id.get, "")
read_task_index = _task_index.get


def current_model_call() -> ModelCallScope | None:
    """The model call in progress in this context, if any."""
    return _model_call.get()


def run_scope(run_id: str) -> AbstractContextManager[str | None]:
    """Bind ``run_id`` for the block: to our context variable and to structlog's.

    Yields the id of the enclosing run (a nested ensemble run from a tool), or None. The task
    index is cleared inside, so a nested run's events never claim the outer run's task.
    """
    return _RunScope(run_id)


class _RunScope:
    """``run_scope`` (a class, not a generator: a third of the cost, once per run)."""

    __slots__ = ("_run_id", "_tokens")

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id

    def __enter__(self) -> str | None:
        parent = _run_id.get()
        # bind/reset by token: bound_contextvars reads every context variable first
        self._tokens = (
            _run_id.set(self._run_id),
            _task_index.set(None),
            _model_call.set(None),
            structlog.contextvars.bind_contextvars(run_id=self._run_id),
        )
        return parent

    def __exit__(self, *_: object) -> None:
        run_token, task_token, call_token, log_tokens = self._tokens
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


def model_call_scope(
    agent_role: str, task_name: str | None, call_id: str
) -> AbstractContextManager[None]:
    """Mark the block as one model call (streamed token deltas are attributed to it)."""
    return _ModelCallScope(ModelCallScope(agent_role, task_name, call_id))


class _ModelCallScope:
    """``model_call_scope`` (a class, not a generator: entered on every model call)."""

    __slots__ = ("_scope", "_token")

    def __init__(self, scope: ModelCallScope) -> None:
        self._scope = scope

    def __enter__(self) -> None:
        self._token = _model_call.set(self._scope)

    def __exit__(self, *_: object) -> None:
        _model_call.reset(self._token)


__all__ = [
    "ModelCallScope",
    "RunContext",
    "current_model_call",
    "current_run_id",
    "current_task_index",
    "enter_task",
    "model_call_scope",
    "naming_run",
    "new_id_hex",
    "new_run_id",
    "read_run_id",
    "read_task_index",
    "run_scope",
]
