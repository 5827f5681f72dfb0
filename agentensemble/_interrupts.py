"""Which BaseExceptions may end a run, and which are only the failure of what raised them.

Tools and handlers are user code: ``argparse`` raises ``SystemExit`` (even with
``exit_on_error=False``), a generator closed at the wrong moment raises ``GeneratorExit``, and a
library may raise a stray ``asyncio.CancelledError``. None of them is a request to stop the run;
letting them through would lose every finished output. Only Ctrl-C (``KeyboardInterrupt``) and a
real cancellation of the running task end a run that way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

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


async def contained(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` as the body of a task of its own, such as one task of a parallel run.

    asyncio re-raises a SystemExit from a task out of the event loop itself, ending every
    other task's work: such exceptions come out as ``EscapedError`` instead.
    """
    try:
        return await awaitable
    except Exception:
        raise
    except BaseException as exc:
        if ends_the_run(exc):
            raise
        raise EscapedError(exc) from exc


__all__ = ["EscapedError", "contained", "ends_the_run", "escaped_message"]
