"""Fan-out of live updates to the browsers watching (server-sent events).

Each open page subscribes and gets a bounded queue. The hub runs on the server's event loop only
(every store change happens there), so it needs no lock. A page too slow to keep up is dropped
rather than letting its queue grow: its ``EventSource`` reconnects and reloads the current state.
"""

from __future__ import annotations

import asyncio
from typing import Any

MAX_QUEUED = 5_000
"""Messages waiting for one page before it is dropped."""

MAX_SUBSCRIBERS = 100


class Subscription:
    """One page's queue of messages; ``closed`` once dropped or the server stops."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(MAX_QUEUED + 1)
        self.closed = False


class Hub:
    """The set of subscribed pages and the one way to send them a message."""

    def __init__(self) -> None:
        self._subs: set[Subscription] = set()
        self.closed = False
        """Set once the server stops: a page reconnecting then gets no new stream, which would
        otherwise hold the shutdown until uvicorn cancels it (a CancelledError on stderr)."""

    def __len__(self) -> int:
        return len(self._subs)

    def subscribe(self) -> Subscription | None:
        """A new subscription, or None when too many pages are open or the server is stopping."""
        if self.closed or len(self._subs) >= MAX_SUBSCRIBERS:
            return None
        sub = Subscription()
        self._subs.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subs.discard(sub)

    def publish(self, message: dict[str, Any]) -> None:
        """Queue ``message`` for every page; a page whose queue is full is dropped."""
        for sub in list(self._subs):
            if sub.queue.qsize() >= MAX_QUEUED:
                self._drop(sub)
            else:
                sub.queue.put_nowait(message)

    def close_all(self) -> None:
        """End every stream, and open no new one (the server is stopping)."""
        self.closed = True
        for sub in list(self._subs):
            self._drop(sub)

    def _drop(self, sub: Subscription) -> None:
        sub.closed = True
        self._subs.discard(sub)
        sub.queue.put_nowait(None)  # wakes the stream, which then ends


__all__ = ["MAX_QUEUED", "Hub", "Subscription"]
