"""Sync code and the event loop: blocking calls in pooled daemon threads, coroutines from sync
code."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any, TypeVar

from agentensemble.tools._pool import HandBack, daemon_pool

T = TypeVar("T")


async def in_worker_thread(fn: Callable[..., T], /, *args: Any) -> T:
    """Await blocking ``fn(*args)`` run in a pooled daemon thread (context variables carry over).

    Like ``asyncio.to_thread``, it keeps the event loop free; unlike it, the thread is no
    worker of the loop's default executor. Python cannot stop a thread, so a cancelled run
    (Ctrl-C) leaves a sync tool body that is already running to finish on its own; with
    ``to_thread`` ``asyncio.run`` and the interpreter's exit would both wait for it first.
    The result of a call nobody awaits any more is dropped. See ``_pool`` for the pool.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():  # cancelled meanwhile: nobody wants the result
            setter(value)

    def target() -> HandBack | None:
        if future.done():  # cancelled before a worker picked it up: the body never starts
            return None
        try:
            result = context.run(fn, *args)
        except GeneratorExit as exc:  # see _Carried
            return partial(_deliver, loop, settle, future.set_exception, _Carried(exc))
        except BaseException as exc:
            return partial(_deliver, loop, settle, future.set_exception, exc)
        return partial(_deliver, loop, settle, future.set_result, result)

    # the result goes back as the worker's hand-back: once it is idle again (see _pool)
    daemon_pool().run_soon(target, getattr(fn, "__qualname__", ""))
    try:
        return await future
    except _Carried as carried:
        raise carried.exception from None


def _deliver(
    loop: asyncio.AbstractEventLoop,
    settle: Callable[[Callable[[Any], None], Any], None],
    setter: Callable[[Any], None],
    value: Any,
) -> None:
    try:  # noqa: SIM105 - a try is free; suppress() costs a context manager
        loop.call_soon_threadsafe(settle, setter, value)
    except RuntimeError:  # the loop is closed: the run is over
        pass


class _Carried(Exception):
    """Carries a GeneratorExit out of a worker thread. Delivered through a future, the task
    would throw it into the awaiting coroutine chain, and Python treats a thrown GeneratorExit
    as ``close()``: every caller's handler would be skipped. Raised again here, it unwinds
    normally and the tool layer can make it the call's failure."""

    def __init__(self, exception: GeneratorExit) -> None:
        super().__init__(str(exception))
        self.exception = exception


def run_coroutine_sync(
    coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop | None = None
) -> T:
    """Block until ``coro`` finishes and return its result; context variables carry over.

    - In a worker thread whose caller's loop is known and running, the coroutine runs on that
      loop (``run_coroutine_threadsafe``), so loop-bound resources (HTTP clients) keep working.
    - In a thread with no running loop, it runs on a fresh loop (``asyncio.run``).
    - In a thread that is running a loop (sync code called from async code), blocking that loop
      is unavoidable; the coroutine runs on a fresh loop in a helper thread, never deadlocking.
    """
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is None:
        if loop is not None and loop.is_running() and not loop.is_closed():
            return asyncio.run_coroutine_threadsafe(coro, loop).result()
        return asyncio.run(coro)
    result: T = daemon_pool().submit(asyncio.run, coro).result()
    return result
