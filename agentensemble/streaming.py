"""``Ensemble.astream``: a run's events as an async iterator, model text token by token.

The run goes on in its own asyncio task; a listener puts every event on a queue the iterator
reads, so events arrive as they happen, in order, ending with ``EnsembleCompleted``. A failure
raises from the iterator after the events that led to it. Closing the iterator (``aclose()``,
or leaving ``async with contextlib.aclosing(...)``) cancels the run and waits until it has
stopped; a bare ``break`` only abandons it, and Python closes it later (when it finalizes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from agentensemble.events import EnsembleEvent, EnsembleListener
from agentensemble.outputs import EnsembleOutput

_DONE = object()

Runner = Callable[[Sequence[EnsembleListener]], Awaitable[EnsembleOutput]]


class _QueueListener:
    """Puts events on the iterator's queue, from the loop's thread or any other."""

    def __init__(self, queue: asyncio.Queue[Any], loop: asyncio.AbstractEventLoop) -> None:
        self._queue = queue
        self._loop = loop
        self._loop_thread = threading.get_ident()

    def on_event(self, event: EnsembleEvent) -> None:
        if threading.get_ident() == self._loop_thread:
            self._queue.put_nowait(event)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody reads
                self._loop.call_soon_threadsafe(self._queue.put_nowait, event)


async def stream_events(run: Runner) -> AsyncIterator[EnsembleEvent]:
    """Start ``run(extra_listeners)`` and yield its events until it ends."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    task = asyncio.ensure_future(run([_QueueListener(queue, loop)]))
    task.add_done_callback(lambda _: queue.put_nowait(_DONE))
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                break
            yield item
        task.result()  # a failed run raises here, after its events
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def astream(
    execute: Callable[[Mapping[str, Any] | None, Sequence[EnsembleListener], bool], Any],
    inputs: Mapping[str, Any] | None,
) -> AsyncIterator[EnsembleEvent]:
    """The iterator behind ``Ensemble.astream`` (``_run.execute``, bound)."""
    return stream_events(lambda listeners: execute(inputs, listeners, True))


__all__ = ["astream", "stream_events"]
