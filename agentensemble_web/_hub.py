"""Fan-out of live updates to the browsers watching (server-sent events).

Each open page subscribes and gets a bounded queue. The hub runs on the server's event loop only
(every store change happens there), so it needs no lock. A page too slow to keep up is dropped
rather than letting its queue grow: it reconnects and reloads the current state.

The caps never lock a new viewer out: a session holds at most ``MAX_PER_SESSION`` streams (its
oldest is closed when it opens another: a reloaded tab's old stream, say), and when
``MAX_SUBSCRIBERS`` are open the stream idle the longest is closed to make room (that page
reconnects on its own, and in turn evicts the idlest).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

MAX_QUEUED = 5_000
"""Messages waiting for one page before it is dropped."""

MAX_SUBSCRIBERS = 100
MAX_PER_SESSION = 6
_order = itertools.count()


class Subscription:
    """One page's queue of messages; ``closed`` once dropped or the server stops."""

    def __init__(self, session: str | None = None) -> None:
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(MAX_QUEUED + 1)
        self.closed = False
        self.session = session
        self.opened = next(_order)
        self.last_active = time.monotonic()


class Hub:
    """The set of subscribed pages and the one way to send them a message."""

    def __init__(self) -> None:
        self._subs: set[Subscription] = set()
        self.closed = False
        """Set once the server stops: a page reconnecting then gets no new stream, which would
        otherwise hold the shutdown until uvicorn cancels it (a CancelledError on stderr)."""

    def __len__(self) -> int:
        return len(self._subs)

    def subscribe(self, session: str | None = None) -> Subscription | None:
        """A new subscription for ``session`` (None: an API client), evicting as documented;
        None once the server is stopping."""
        if self.closed:
            return None
        if session is not None:
            mine = sorted((s for s in self._subs if s.session == session), key=lambda s: s.opened)
            for old in mine[: max(0, len(mine) - MAX_PER_SESSION + 1)]:
                self._drop(old)
        while len(self._subs) >= MAX_SUBSCRIBERS:
            self._drop(min(self._subs, key=lambda s: (s.last_active, s.opened)))
        sub = Subscription(session)
        self._subs.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subs.discard(sub)

    def publish(self, message: dict[str, Any]) -> None:
        """Queue ``message`` for every page; a page whose queue is full is dropped."""
        now = time.monotonic()
        for sub in list(self._subs):
            if sub.queue.qsize() >= MAX_QUEUED:
                self._drop(sub)
            else:
                sub.queue.put_nowait(message)
                sub.last_active = now

    def close_all(self) -> None:
        """End every stream, and open no new one (the server is stopping)."""
        self.closed = True
        for sub in list(self._subs):
            self._drop(sub)

    def _drop(self, sub: Subscription) -> None:
        sub.closed = True
        self._subs.discard(sub)
        sub.queue.put_nowait(None)  # wakes the stream, which then ends


__all__ = ["MAX_PER_SESSION", "MAX_QUEUED", "MAX_SUBSCRIBERS", "Hub", "Subscription"]
