"""The seam where a run's model turns, tool calls and review decisions happen.

By default each is a plain call. A step runner installed for a run (``agentensemble.durable``
installs one that checkpoints every step in a database) sees each call with its kind and a name,
and decides how to run it. The executor, the workflows and the tools' approval gate call
``as_step`` and never know whether the run is durable. It imports nothing from agentensemble,
so every layer may use it (it sits with the base modules, beside ``run_context``).

``step_key`` gives what a step asks from the outside world (a review's id) a name that stays the
same when a recovered run re-runs that step, so a webhook sees the same review again, not a new
one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")
StepKind = Literal["model", "tool", "review"]


class StepRunner(Protocol):
    """Runs one step of a run; ``call`` does the work and may be skipped if already done.

    A runner may also have ``step_key() -> str | None``, ``branches(count)`` and
    ``replaced_output() -> str | None`` (see the functions of those names below).
    """

    async def run_step(
        self, kind: StepKind, name: str, call: Callable[[], Awaitable[T]], *, durable_itself: bool
    ) -> T: ...


_runner: ContextVar[StepRunner | None] = ContextVar("agentensemble_step_runner", default=None)


def as_step(
    kind: StepKind,
    name: str,
    fn: Callable[..., Awaitable[T]],
    *args: Any,
    durable_itself: bool = False,
) -> Awaitable[T]:
    """``fn(*args)`` as a step of the current run, to be awaited; with no runner installed (a
    plain run), exactly that call: the one place that decides, so callers pass the callable
    and its arguments (no lambda, no closure) and never test for a runner themselves. (A plain
    function handing back the awaitable: in a plain run no frame of its own sits between the
    caller and the call.)

    ``durable_itself``: the call makes its own durable operations (a delegation, a review
    handler that waits for a message across restarts); a runner must let it run in the run
    itself, not in a step.
    """
    runner = _runner.get()
    if runner is None:
        return fn(*args)
    call = partial(fn, *args) if args else fn
    return runner.run_step(kind, name, call, durable_itself=durable_itself)


def step_key() -> str | None:
    """A key for something the current step asks, stable across a recovery; else None.

    Inside a step of a durable run: unique to the run, the step and the n-th key asked within
    that one execution of the step (a pipeline tool may ask several approvals), and the same
    when a recovered run re-runs the step. None when no runner that keys steps is installed
    or no step is running (a plain run: callers use a fresh random id).
    """
    runner = _runner.get()
    key = getattr(runner, "step_key", None)
    if not callable(key):
        return None
    value = key()
    return value if isinstance(value, str) and value else None


def checkpointing() -> bool:
    """Whether a step runner is installed (a durable run): the calls of a tool turn must start
    in replay order (the turn's plan reads it once; a call never needs to: see ``as_step``)."""
    return _runner.get() is not None


def branches(count: int) -> list[AbstractContextManager[None]] | None:
    """``count`` scopes for calls of one turn that run at once and make steps of their own.

    A checkpointing runner hands each call a scope of its own (reserved in call order), inside
    which the call's steps are numbered the same on every replay whatever order the calls run
    in. None when no runner can (a plain run: nothing to number; a runner without branches:
    the caller runs such calls one after another).
    """
    runner = _runner.get()
    make = getattr(runner, "branches", None)
    if not callable(make):
        return None
    scopes = make(count)
    return list(scopes) if scopes is not None else None


def replaced_output() -> str | None:
    """Text that replaces the output of the current task's agent, or None (the usual case).

    A durable fork given an edited output for the task before its fork point: that task's
    steps replay from the parent's checkpoints and its output is then replaced, as a
    reviewer's Edit would, before it is reviewed and handed on. Asked by the task's own
    executor only, never by a delegated agent or an ensemble run inside a tool.
    """
    runner = _runner.get()
    get = getattr(runner, "replaced_output", None)
    if not callable(get):
        return None
    value = get()
    return value if isinstance(value, str) else None


@contextmanager
def use_step_runner(runner: StepRunner | None) -> Iterator[None]:
    """Install ``runner`` for the steps of everything run inside the block."""
    token = _runner.set(runner)
    try:
        yield
    finally:
        _runner.reset(token)


__all__ = [
    "StepKind",
    "StepRunner",
    "as_step",
    "branches",
    "checkpointing",
    "replaced_output",
    "step_key",
    "use_step_runner",
]
