"""Which BaseExceptions may end a run, and which are only the failure of what raised them.

Tools and handlers are user code: ``argparse`` raises ``SystemExit`` (even with
``exit_on_error=False``), a generator closed at the wrong moment raises ``GeneratorExit``, and a
library may raise a stray ``asyncio.CancelledError``. None of them is a request to stop the run;
letting them through would lose every finished output. Only Ctrl-C (``KeyboardInterrupt``) and a
real cancellation of the running task end a run that way.

A ``KeyboardInterrupt`` raised by user code (a tool, a handler) inside an asyncio task of its
own would be re-raised by asyncio out of the event loop itself: ``run()``'s shared loop thread
died and the caller waited forever. Tasks therefore carry it out as ``Interrupted`` (an ordinary
exception), and whoever awaits the task raises the ``KeyboardInterrupt`` again, in the run's own
task, where it stops the run as Ctrl-C does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


def ends_the_run(exc: BaseException) -> bool:
    """Whether ``exc`` must propagate: Ctrl-C, or cancellation of the task that is running.

    A ``CancelledError`` counts only when the current task is being cancelled (Python 3.11+
    ``Task.cancelling()``; on 3.10 every CancelledError counts). Outside a task (a sync tool in
    a worker thread) no cancellation can be meant for the code, so it is a failure.
    """
    if isinstance(exc, KeyboardInterrupt):
        return True
    if not isinstance(exc, asyncio.CancelledError):
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop in this thread
        return False
    if task is None:
        return False
    cancelling = getattr(task, "cancelling", None)
    return True if cancelling is None else cancelling() > 0


def escaped_message(exc: BaseException) -> str:
    """What the model (or the task error) says about a BaseException that is no Exception:
    ``SystemExit(2)`` alone would read as "2"."""
    detail = str(exc)
    return f"raised {type(exc).__name__}" + (f": {detail}" if detail else "")


class EscapedError(Exception):
    """Carries a BaseException that is no stop request (SystemExit, GeneratorExit, a stray
    CancelledError) out of a task of its own as an ordinary failure; ``error`` is the original."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error


class Interrupted(Exception):  # a carrier, not an error of its own
    """Carries a ``KeyboardInterrupt`` out of a task of its own (see the module's docstring);
    ``interrupt`` is the original, raised again by ``reraise_interrupt``."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        super().__init__("KeyboardInterrupt")
        self.interrupt = interrupt


def keep_outputs(stop: BaseException, outputs: list[Any]) -> None:
    """Attach the run's completed task outputs to the exception that stops it (Ctrl-C, a
    cancellation): ``except KeyboardInterrupt as stop: stop.completed_outputs``. The innermost
    runner's list wins (a nested run's outer runner does not overwrite it)."""
    if not hasattr(stop, "completed_outputs"):
        with contextlib.suppress(AttributeError, TypeError):
            stop.completed_outputs = list(outputs)  # type: ignore[attr-defined]


def reraise_interrupt(exc: BaseException | None) -> None:
    """Raise the carried ``KeyboardInterrupt`` if ``exc`` is an ``Interrupted``."""
    if isinstance(exc, Interrupted):
        raise exc.interrupt.with_traceback(exc.interrupt.__traceback__)


async def contained(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` as the body of a task of its own, such as one task of a parallel run
    or one tool call of a model turn.

    asyncio re-raises a SystemExit or a KeyboardInterrupt from a task out of the event loop
    itself, ending every other task's work (and ``run()``'s shared loop): a KeyboardInterrupt
    comes out as ``Interrupted`` (the awaiting code raises it again), the others as
    ``EscapedError``. Real cancellation goes through as it is.
    """
    try:
        return await awaitable
    except Exception:
        raise
    except KeyboardInterrupt as exc:
        raise Interrupted(exc) from None
    except BaseException as exc:
        if ends_the_run(exc):
            raise
        raise EscapedError(exc) from exc


__all__ = [
    "EscapedError",
    "Interrupted",
    "contained",
    "ends_the_run",
    "escaped_message",
    "keep_outputs",
    "reraise_interrupt",
]
