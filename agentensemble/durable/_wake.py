"""Wake a worker's queue poll when there is work for it, instead of waiting for the next poll.

DBOS's queue thread sleeps ``poll_interval`` seconds between polls of the queue, so a worker that
has finished its runs, or a run submitted to an idle worker, waits up to that long: with short
runs a worker spent most of its time asleep (16 runs/s, benchmarks/RESULTS.md). Here the sleep
ends early when

- a queued run finishes in this process (a slot of ``worker_concurrency`` is free again),
- a run is submitted from this process,
- on Postgres, any process submits, forks or recovers a run: it sends a notification
  (``NOTIFY``) that every worker of the application listens for.

A worker with no free slot is not woken by new work (a finished run will wake it), and a burst
of wakes makes one poll (at most one per 10 ms). A busy worker's finished runs are gathered: a
poll costs as much CPU as three or four checkpoints (DBOS reloads the queue, reads the latest
version, claims), and with one poll per finished run a busy worker spent a fifth of its CPU
polling (benchmarks/RESULTS.md, "fourth pass"). So a freed slot wakes the poll once a quarter of the
slots are free (``batch_of``), or ``LINGER`` seconds after the first freed slot at the latest, and
the poll claims a run for each free slot; new work (a submit, a notification) still wakes it at
once. A wake only shortens the sleep: the poll that follows is DBOS's own (the DBOS queue stays
the source of truth, with its concurrency and rate limits), and a lost notification costs at
most one ``poll_interval``. DBOS offers no hook for it (pinned minor: see pyproject), so the
queue thread's stop event is given a ``wait`` that a wake can end early; every other thread's
wait on it is unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

from agentensemble.durable import _dbos
from agentensemble.logging import get_logger

_log = get_logger()
_cond = threading.Condition()
# the strongest wake not yet consumed by the queue thread's next wait
_NONE, _SLOT, _WORK = 0, 1, 2
_pending = [_NONE]
_MIN_GAP = 0.01  # seconds between two woken polls, at least
LINGER = 0.2  # seconds a freed slot waits for others to free before the poll, at most


class _WakeableEvent(threading.Event):
    """A DBOS stop event whose wait, in the queue thread of ``_queue_thread`` only, also ends on
    a wake when the worker has a free slot (returning False: not stopped): at once for new work,
    for freed slots once ``_batch`` are free or ``LINGER`` after the first. ``set`` still stops
    every waiter."""

    _queue_thread = ""
    _free_slots: Callable[[], int] = staticmethod(lambda: 1)
    _batch = 1  # free slots that make a poll worth it at once
    _last = 0.0  # when the queue thread last left its wait (polled)

    def set(self) -> None:
        super().set()
        with _cond:
            _cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is None or threading.current_thread().name != self._queue_thread:
            return super().wait(timeout)
        deadline = time.monotonic() + timeout
        with _cond:
            linger: float | None = None  # poll by then: a slot is free, too few for a batch
            while not self.is_set():
                now = time.monotonic()
                until = deadline if linger is None else min(deadline, linger)
                if until <= now:
                    break
                if _pending[0] == _NONE:
                    _cond.wait(until - now)
                    continue
                kind, _pending[0] = _pending[0], _NONE
                answer = answer_to_wake(kind, self._free_slots(), self._batch)
                if answer == "sleep":
                    continue  # no free slot: a finished run will wake it again
                if answer == "linger":
                    linger = now + LINGER if linger is None else linger
                    continue
                # a burst of wakes (many submits at once) makes one poll, not one each
                gap = self._last + _MIN_GAP - now
                if gap > 0:
                    _cond.wait(min(gap, deadline - now))
                    _pending[0] = _NONE
                break
        self._last = time.monotonic()
        return self.is_set()


def answer_to_wake(kind: int, free: int, batch: int) -> str:
    """What a woken queue thread does: ``"poll"`` now, ``"linger"`` (poll within ``LINGER``
    unless more slots free first), or ``"sleep"`` on (no free slot)."""
    if free <= 0:
        return "sleep"
    if kind == _SLOT and free < batch:
        return "linger"
    return "poll"


def wake() -> None:
    """End the queue thread's current sleep (or the next one) now, if it has a free slot:
    there is new work."""
    _wake(_WORK)


def _slot_freed() -> None:
    _wake(_SLOT)


def _wake(kind: int) -> None:
    with _cond:
        _pending[0] = max(_pending[0], kind)
        _cond.notify_all()


def batch_of(worker_concurrency: int) -> int:
    """How many free slots wake a busy worker's poll at once: a quarter of them (at least 1)."""
    return max(1, worker_concurrency // 4)


def install(queue_name: str, worker_concurrency: int) -> None:
    """Make the launched DBOS's queue thread of ``queue_name`` wakeable, and wake it whenever a
    run of that queue finishes in this process (a slot is free: take the next queued runs
    soon). DBOS's internals are reached through ``_dbos.py``."""

    def free_slots() -> int:
        return worker_concurrency - _dbos.running_on_queue(queue_name)

    for event in _dbos.queue_stop_events():
        if type(event) is threading.Event:
            event.__class__ = _WakeableEvent
        if isinstance(event, _WakeableEvent):
            event._queue_thread = _dbos.queue_thread_name(queue_name)
            event._free_slots = free_slots
            event._batch = batch_of(worker_concurrency)
    _dbos.on_run_finished(queue_name, _slot_freed)


def channel(app_name: str) -> str:
    """The Postgres notification channel of an application's queue (a valid identifier)."""
    return "agentensemble_runs_" + hashlib.sha256(app_name.encode()).hexdigest()[:16]


def notify(engine: Any, app_name: str) -> None:
    """Tell every worker listening on Postgres that there is new work (best effort: a worker
    that misses it finds the work at its next poll). Nothing to do on SQLite."""
    if engine.dialect.name != "postgresql":
        return
    import sqlalchemy as sa

    try:
        with engine.begin() as connection:
            connection.execute(
                sa.text("SELECT pg_notify(:channel, '')"), {"channel": channel(app_name)}
            )
    except Exception as error:  # never fail a submit over a wake-up
        _log.debug("queue notification not sent", error=type(error).__name__)


class Listener:
    """A thread that listens on Postgres for new work and wakes the queue thread."""

    def __init__(self, database_url: str, app_name: str) -> None:
        self._url = database_url.replace("postgresql+psycopg://", "postgresql://", 1)
        self._channel = channel(app_name)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="agentensemble-queue-listener", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        import psycopg

        backoff = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=5) as connection:
                    connection.execute(f"LISTEN {self._channel}")
                    backoff = 0.5
                    wake()  # work may have come while not listening
                    while not self._stop.is_set():
                        for _ in connection.notifies(timeout=1.0):
                            wake()
            except Exception as error:  # the database went away: polling still works; retry
                _log.debug("queue listener reconnecting", error=type(error).__name__)
                if self._stop.wait(backoff):
                    return
                backoff = min(backoff * 2, 10.0)


def start_listener(database_url: str, app_name: str) -> Listener | None:
    """A started ``Listener`` on Postgres; None on SQLite (wakes stay in this process)."""
    if not database_url.startswith(("postgresql", "postgres")):
        return None
    listener = Listener(database_url, app_name)
    listener.start()
    return listener


def stop_listener(listener: Listener | None) -> None:
    if listener is not None:
        with contextlib.suppress(Exception):
            listener.stop()


__all__ = [
    "LINGER",
    "answer_to_wake",
    "batch_of",
    "channel",
    "install",
    "notify",
    "start_listener",
    "stop_listener",
    "wake",
]
