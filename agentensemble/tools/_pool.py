"""A pool of daemon worker threads for blocking user code (sync tools, handlers, reviewers).

Why not ``concurrent.futures.ThreadPoolExecutor`` (or ``asyncio.to_thread``): its workers are
joined at interpreter exit, so a cancelled run or Ctrl-C would wait for a sync tool body that
is still running. Python cannot stop a thread; ours are daemons, so nobody waits for them.

Why not a new thread per call (what we did before): starting a thread costs far more than
handing work to a waiting one. The pool keeps that saving without ever queueing a call behind a
busy worker: a call goes to an idle worker if there is one, otherwise a new worker starts, so a
blocked tool can never starve other calls. A worker idle for ``IDLE_SECONDS`` exits. After
``os.fork()`` the child starts with an empty pool (the parent's threads do not exist there).

A job may return a *hand-back*: a callable the worker runs once it has counted itself idle
again, just before it waits for more work. Handing a result back wakes the waiting thread (the
event loop); done as the worker's last step, the woken thread finds the GIL free instead of
waiting for the worker's own bookkeeping to release it (a third less CPU per sync tool call
measured on a 2-core machine: benchmarks/RESULTS.md).
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import itertools
import os
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")

IDLE_SECONDS = 30.0
"""How long a worker waits for more work before it exits."""

HandBack = Callable[[], object]
"""What a job may return: run by the worker once it is idle again (see the module's doc)."""

Job = Callable[[], "HandBack | None"]

_Work = tuple[Job, str]


class DaemonPool:
    """Runs callables in daemon threads, reusing idle ones; grows when every worker is busy.

    Make pools at module level only: each registers an ``os.fork`` hook for its lifetime.
    """

    def __init__(self, name: str = "agentensemble-worker", idle_seconds: float = IDLE_SECONDS):
        self._name = name
        self._idle_seconds = idle_seconds
        self._reset()
        if hasattr(os, "register_at_fork"):  # the parent's workers do not exist in a child
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._work: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._idle = 0  # workers waiting for work, minus work handed to them not yet taken
        self._busy: set[threading.Thread] = set()
        self._numbers = itertools.count(1)

    def run_soon(self, job: Job, label: str = "") -> None:
        """Run ``job()`` in a worker thread; it must not raise (wrap it to report errors). What
        it returns, if not None, is its hand-back: called once the worker is idle again."""
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                self._work.put((job, label))  # under the lock: an expiring worker takes it
                return
            name = f"{self._name}-{next(self._numbers)}"
        threading.Thread(target=self._worker, args=((job, label),), name=name, daemon=True).start()

    def submit(self, fn: Callable[..., T], /, *args: Any) -> concurrent.futures.Future[T]:
        """Run ``fn(*args)`` in a worker with the caller's context variables; its future."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        context = contextvars.copy_context()

        def job() -> HandBack | None:
            if not future.set_running_or_notify_cancel():
                return None
            try:
                result = context.run(fn, *args)
            except BaseException as exc:  # handed to whoever waits on the future
                return partial(future.set_exception, exc)
            return partial(future.set_result, result)

        self.run_soon(job, getattr(fn, "__qualname__", ""))
        return future

    def busy_threads(self) -> set[threading.Thread]:
        """Workers running a job right now (for tests and diagnostics)."""
        with self._lock:
            return set(self._busy)

    def _worker(self, first: _Work) -> None:
        me = threading.current_thread()
        work: _Work | None = first
        lock = self._lock
        while work is not None:
            with lock:
                self._busy.add(me)
            try:
                hand_back = work[0]()
            except BaseException:  # jobs report their own errors
                hand_back = None
            with lock:
                self._busy.discard(me)
                self._idle += 1
            if hand_back is not None:  # the last step before waiting: see the module's doc
                try:  # noqa: SIM105 - a try is free; suppress() costs a context manager
                    hand_back()
                except BaseException:  # hand-backs report their own errors
                    pass
            work = self._next_work()

    def _next_work(self) -> _Work | None:
        try:
            return self._work.get(timeout=self._idle_seconds)
        except queue.Empty:
            pass
        with self._lock:
            try:  # work handed to "an idle worker" just as this one expired
                return self._work.get_nowait()
            except queue.Empty:
                self._idle -= 1
                return None


_pool = DaemonPool()


def daemon_pool() -> DaemonPool:
    """The process-wide pool that runs blocking user code."""
    return _pool


__all__ = ["IDLE_SECONDS", "DaemonPool", "HandBack", "Job", "daemon_pool"]
