"""Task events of a served run as progress updates, sent in order off the run's path.

Listeners are called synchronously on the run's loop; sending to a client is async and may be
slow or fail. ``ProgressPump`` queues one line per task event and a single sender task sends
them in order: a slow client never slows the run, a failing send is logged and dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from agentensemble.events import EnsembleEvent, EnsembleStarted, TaskCompleted, TaskStarted
from agentensemble.logging import get_logger, redact_text

#: How long a finished run waits for its last updates to go out.
FLUSH_SECONDS = 5.0

#: ``send(progress, total, message)``: progress grows by one with every update.
Send = Callable[[float, "float | None", str], Awaitable[None]]


def describe(event: EnsembleEvent) -> str | None:
    """A line for a task event (None for the others)."""
    if isinstance(event, TaskStarted):
        lines = event.task_description.strip().splitlines()
        label = lines[0][:120] if lines else ""
        return f"task {event.task_index}/{event.total_tasks} started: {label}"
    if isinstance(event, TaskCompleted):
        return f"task {event.task_index}/{event.total_tasks} done"
    return None


class ProgressPump:
    """An ensemble listener (``on_event``) that sends task events through ``send``."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._queue: asyncio.Queue[tuple[float, float | None, str] | None] = asyncio.Queue()
        self._sender = asyncio.ensure_future(self._send_all())
        self._count = 0
        self._total: float | None = None

    def on_event(self, event: EnsembleEvent) -> None:
        if isinstance(event, EnsembleStarted):
            self._total = float(2 * event.total_tasks)  # each task starts and completes
            return
        line = describe(event)
        if line is None:
            return
        self._count += 1
        self._queue.put_nowait((float(self._count), self._total, redact_text(line)))

    async def _send_all(self) -> None:
        while (item := await self._queue.get()) is not None:
            try:
                await self._send(*item)
            except Exception as error:
                get_logger().debug("progress update not sent", error=str(error))

    async def close(self) -> None:
        """Send what is queued (bounded wait), then stop."""
        self._queue.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(self._sender), FLUSH_SECONDS)
        except asyncio.TimeoutError:
            self._sender.cancel()

    def abandon(self) -> None:
        """Stop at once (the run was cancelled)."""
        self._sender.cancel()


__all__ = ["FLUSH_SECONDS", "ProgressPump", "describe"]
