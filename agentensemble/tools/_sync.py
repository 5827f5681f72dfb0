"""Run a coroutine to completion from sync code, wherever that sync code happens to run."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


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
    context = contextvars.copy_context()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = context.run(asyncio.run, coro)
        except BaseException as exc:  # handed back to the caller below
            box["error"] = exc

    thread = threading.Thread(target=target, name="agentensemble-sync-bridge", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    result: T = box["result"]
    return result
