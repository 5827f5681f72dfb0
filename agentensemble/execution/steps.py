"""The seam where a run's model turns, tool calls and review decisions happen.

By default each is a plain call. A step runner installed for a run (``agentensemble.durable``
installs one that checkpoints every step in a database) sees each call with its kind and a name,
and decides how to run it. The executor and the workflows call ``as_step`` and never know
whether the run is durable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal, Protocol, TypeVar

T = TypeVar("T")
StepKind = Literal["model", "tool", "review"]


class StepRunner(Protocol):
    """Runs one step of a run; ``call`` does the work and may be skipped if already done."""

    async def run_step(
        self, kind: StepKind, name: str, call: Callable[[], Awaitable[T]], *, durable_itself: bool
    ) -> T: ...


_runner: ContextVar[StepRunner | None] = ContextVar("agentensemble_step_runner", default=None)


async def as_step(
    kind: StepKind,
    name: str,
    call: Callable[[], Awaitable[T]],
    *,
    durable_itself: bool = False,
) -> T:
    """Run ``call`` as a step of the current run (a plain call when no runner is installed).

    ``durable_itself``: the call makes its own durable operations (a review handler that waits
    for a message across restarts); a runner must let it run in the run itself, not in a step.
    """
    runner = _runner.get()
    if runner is None:
        return await call()
    return await runner.run_step(kind, name, call, durable_itself=durable_itself)


def checkpointing() -> bool:
    """Whether a step runner is installed (a durable run): calls must start in replay order."""
    return _runner.get() is not None


@contextmanager
def use_step_runner(runner: StepRunner | None) -> Iterator[None]:
    """Install ``runner`` for the steps of everything run inside the block."""
    token = _runner.set(runner)
    try:
        yield
    finally:
        _runner.reset(token)


__all__ = ["StepKind", "StepRunner", "as_step", "checkpointing", "use_step_runner"]
