"""``WebConsole``: the listener that reports a run's events to the web console.

``Ensemble(..., listeners=[WebConsole(url, token)])`` from the same or another process. The run
never waits for the console: ``on_event`` turns the event into JSON and puts it on a bounded
queue; a daemon thread posts batches. When the queue is full (the console is slow or down),
events are dropped and counted (``dropped``); a failed post is dropped and counted
(``failed_posts``) and the sender backs off. Nothing here raises into the run.
"""

from __future__ import annotations

import atexit
import json
import queue
import threading
import time
import weakref
from typing import Any

import httpx

from agentensemble.logging import get_logger, register_secret
from agentensemble_web.wire import event_to_json

MAX_BACKOFF_SECONDS = 2.0
MAX_BATCH_BYTES = 1_000_000
"""A batch's size limit (the console refuses bodies over 2 MB); a bigger event is dropped."""
EXIT_FLUSH_SECONDS = 1.0
"""At interpreter exit, how long every listener together may take to post what is queued."""

_LIVE: weakref.WeakSet[WebConsole] = weakref.WeakSet()


def _flush_all_at_exit() -> None:
    deadline = time.monotonic() + EXIT_FLUSH_SECONDS
    for listener in list(_LIVE):
        listener.flush(max(0.0, deadline - time.monotonic()))


atexit.register(_flush_all_at_exit)


class WebConsole:
    """Posts every event of the runs it listens to to the console at ``url`` (see the module)."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        max_queue: int = 10_000,
        batch_size: int = 200,
        post_timeout: float = 2.0,
    ) -> None:
        if max_queue < 1 or batch_size < 1:
            raise ValueError("max_queue and batch_size must be at least 1")
        self.url = url.rstrip("/")
        self._token = token
        register_secret(token)
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue(max_queue)
        self._batch_size = batch_size
        self._post_timeout = post_timeout
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._in_flight = 0
        self._carry: bytes | None = None
        self._closed = False
        self.dropped = 0
        """Events dropped: the queue was full, or one event alone was too large to send."""
        self.failed_posts = 0
        """Batches the console did not accept (down, refused, or too slow)."""
        self.delivered = 0
        """Events the console accepted."""

    def __repr__(self) -> str:
        return f"WebConsole({self.url!r}, token='***')"

    def on_event(self, event: Any) -> None:
        """Queue the event for the console; never blocks, never raises."""
        try:
            self._queue.put_nowait(event_to_json(event))
        except queue.Full:
            self.dropped += 1
            return
        except Exception as exc:  # a listener must never fail a run
            get_logger().warning("web console: event not sent", error=str(exc))
            return
        self._ensure_sender()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait up to ``timeout`` s for every queued event to be posted (or dropped)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._queue.empty() and self._in_flight == 0:
                    return True
            time.sleep(0.01)
        return False

    def close(self, timeout: float = 2.0) -> None:
        """Flush (bounded) and stop the sender thread."""
        self.flush(timeout)
        self._closed = True
        thread = self._thread
        if thread is not None:
            thread.join(timeout=timeout)

    def _ensure_sender(self) -> None:
        if self._thread is not None or self._closed:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._send_loop, name="agentensemble-web-console", daemon=True
                )
                self._thread.start()
                _LIVE.add(self)

    def _encode(self, event: dict[str, Any]) -> bytes | None:
        data = json.dumps(event, ensure_ascii=False, default=str).encode("utf-8", "replace")
        if len(data) > MAX_BATCH_BYTES:  # one event alone would be refused by the console
            self.dropped += 1
            return None
        return data

    def _next_batch(self) -> list[bytes] | None:
        """Up to ``batch_size`` encoded events within ``MAX_BATCH_BYTES``; None when idle.
        An event that does not fit is carried to the next batch (and counted in flight)."""
        if self._carry is not None:
            first: bytes | None = self._carry
            self._carry = None
        else:
            try:
                event = self._queue.get(timeout=0.2)
            except queue.Empty:
                return None
            with self._lock:
                self._in_flight += 1
            first = self._encode(event)
        batch = [first] if first is not None else []
        size = len(first or b"")
        while len(batch) < self._batch_size:
            try:
                data = self._encode(self._queue.get_nowait())
            except queue.Empty:
                break
            if data is None:
                continue
            if size + len(data) > MAX_BATCH_BYTES:
                self._carry = data
                with self._lock:
                    self._in_flight += 1
                break
            batch.append(data)
            size += len(data)
        return batch

    def _send_loop(self) -> None:
        backoff = 0.0
        headers = {"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"}
        with httpx.Client(timeout=self._post_timeout, headers=headers) as client:
            while not self._closed:
                batch = self._next_batch()
                if batch is None:
                    continue
                try:
                    ok = self._post(client, batch) if batch else True
                finally:
                    with self._lock:
                        self._in_flight -= 1
                if ok:
                    backoff = 0.0
                else:
                    backoff = min(MAX_BACKOFF_SECONDS, backoff * 2 or 0.05)
                    time.sleep(backoff)

    def _post(self, client: httpx.Client, batch: list[bytes]) -> bool:
        body = b'{"events":[' + b",".join(batch) + b"]}"
        try:
            # only the status is read: an answer of gigabytes (or a gzip bomb) costs nothing
            with client.stream("POST", f"{self.url}/api/events", content=body) as answer:
                status = answer.status_code
        except Exception as exc:  # down, refused, too slow: drop this batch, keep the run going
            self.failed_posts += 1
            if self.failed_posts == 1 or self.failed_posts % 100 == 0:
                get_logger().warning(
                    "web console unreachable; events dropped",
                    url=self.url,
                    error=f"{type(exc).__name__}: {exc}",
                    failed_posts=self.failed_posts,
                )
            return False
        if status != 200:
            self.failed_posts += 1
            if self.failed_posts == 1 or self.failed_posts % 100 == 0:
                get_logger().warning("web console refused events", url=self.url, status=status)
            return False
        self.delivered += len(batch)
        return True


__all__ = ["WebConsole"]
