"""A pool of daemon worker threads for blocking user code (sync tools, handlers, reviewers).

Below every user of it (``tools/_sync.py``, ``_background_loop.py``, the review package's
``_asking.py``), so none reaches into ``tools/`` for it.

Why not ``concurrent.futures.ThreadPoolExecutor`` (or ``asyncio.to_thread``): its workers are
joined at interpreter exit, so a cancelled run or Ctrl-C would wait for a sync tool body that
is still running. Python cannot stop a thread; ours are daemons, so nobody waits for them.

Why not a new thread per call (what we did before): starting a thread costs far more than
handing work to a waiting one. The pool keeps that saving without ever queueing a call behind a
busy worker: a call goes to an idle worker if there is one, otherwise a new worker starts, so a
blocked tool can never starve other calls. A worker idle for ``IDLE_SECONDS`` exits. After
``os.fork()`` the child starts with an empty pool (the parent's threads do not exist there).

Each idle worker waits on its own wake-up (where ``select.poll`` exists, an ``eventfd`` on
Linux or a pipe elsewhere: one descriptor per live worker, or two, closed when it exits; a lock
elsewhere); a call takes the worker idle last, hands it the job and wakes it. See
``_PipeWorker`` for why a descriptor. A process out of file descriptors still gets workers:
those wait on a lock.

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
import select
import sys
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


class _LockWorker:
    """One worker thread's wake-up (a lock it blocks on) and the job handed to it.

    The portable wake-up; ``_PipeWorker`` is the one used where ``select.poll`` exists."""

    __slots__ = ("_lock", "thread", "work")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()  # held until there is work
        self.work: _Work | None = None
        self.thread: threading.Thread | None = None

    def wake(self) -> None:
        try:  # noqa: SIM105 - a try is free; suppress() costs a context manager
            self._lock.release()
        except RuntimeError:  # a late wake-up left it released: the worker wakes all the same
            pass

    def wait(self, timeout_ms: int) -> bool:
        """Wait for a wake-up; False if none came within ``timeout_ms``."""
        return self._lock.acquire(timeout=timeout_ms / 1000)

    def close(self) -> None:
        pass


_ONE = (1).to_bytes(8, sys.byteorder)  # an eventfd takes an 8-byte count; a pipe, any bytes


def _wake_fds() -> tuple[int, int]:
    """A worker's wake-up (read end, write end): one eventfd where the platform has it (one
    descriptor, and a little cheaper to wake through than a pipe), else a pipe; neither is
    inherited by child processes."""
    if hasattr(os, "eventfd"):
        fd = os.eventfd(0, os.EFD_CLOEXEC)
        return fd, fd
    return os.pipe()


class _PipeWorker:
    """One worker thread's own wake-up descriptor (an eventfd, or a pipe) and its job.

    Why a descriptor: the waker's ``os.write`` lets go of the GIL, so the woken worker finds it
    free. Released locks and queues wake the worker while the waker still holds the GIL: it
    runs, finds the GIL taken and sleeps again, and each call paid about two more context
    switches (benchmarks/RESULTS.md, the sync tool's hand-off). Wake-ups not yet read add up
    in an eventfd and are read at once: a late one is skipped either way (``_next_work``)."""

    __slots__ = ("_poller", "_read_fd", "_write_fd", "thread", "work")

    def __init__(self) -> None:
        self._read_fd, self._write_fd = _wake_fds()
        self._poller = select.poll()
        self._poller.register(self._read_fd, select.POLLIN)
        self.work: _Work | None = None
        self.thread: threading.Thread | None = None

    def wake(self) -> None:
        os.write(self._write_fd, _ONE)

    def wait(self, timeout_ms: int) -> bool:
        """Wait for a wake-up; False if none came within ``timeout_ms``."""
        if not self._poller.poll(timeout_ms):
            return False
        os.read(self._read_fd, 8)
        return True

    def close(self) -> None:
        for fd in {self._read_fd, self._write_fd}:
            try:  # noqa: SIM105 - a try is free; suppress() costs a context manager
                os.close(fd)
            except OSError:
                pass


_Worker = _PipeWorker if hasattr(select, "poll") else _LockWorker


class DaemonPool:
    """Runs callables in daemon threads, reusing idle ones; grows when every worker is busy.

    Make pools at module level only: each registers an ``os.fork`` hook for its lifetime.
    """

    _worker_type: type[_PipeWorker | _LockWorker] = _Worker

    def __init__(self, name: str = "agentensemble-worker", idle_seconds: float = IDLE_SECONDS):
        self._name = name
        self._idle_ms = max(1, round(idle_seconds * 1000))
        self._idle: list[_PipeWorker | _LockWorker] = []
        self._busy: set[_PipeWorker | _LockWorker] = set()
        self._reset()
        if hasattr(os, "register_at_fork"):  # the parent's workers do not exist in a child
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        for worker in (*self._idle, *self._busy):  # after a fork: the parent's, threadless here
            worker.close()
        self._lock = threading.Lock()
        self._idle = []  # waiting for work, the one idle last at the end (its cache is warm)
        self._busy = set()
        self._numbers = itertools.count(1)

    def run_soon(self, job: Job, label: str = "") -> None:
        """Run ``job()`` in a worker thread; it must not raise (wrap it to report errors). What
        it returns, if not None, is its hand-back: called once the worker is idle again."""
        with self._lock:
            if self._idle:
                worker = self._idle.pop()
                worker.work = (job, label)
                self._busy.add(worker)
            else:
                try:
                    worker = self._worker_type()
                except OSError:  # out of file descriptors: this worker waits on a lock
                    worker = _LockWorker()
                worker.work = (job, label)
                self._busy.add(worker)
                worker.thread = threading.Thread(
                    target=self._serve,
                    args=(worker,),
                    name=f"{self._name}-{next(self._numbers)}",
                    daemon=True,
                )
                try:
                    worker.thread.start()
                except BaseException:  # no thread (a resource limit): nothing stays behind
                    self._busy.discard(worker)
                    worker.close()
                    raise
                return
        worker.wake()  # outside the lock: see _PipeWorker

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
            return {worker.thread for worker in self._busy if worker.thread is not None}

    def _serve(self, me: _PipeWorker | _LockWorker) -> None:
        lock = self._lock
        work = me.work
        while work is not None:
            me.work = None
            try:
                hand_back = work[0]()
            except BaseException:  # jobs report their own errors
                hand_back = None
            with lock:
                self._busy.discard(me)
                self._idle.append(me)
            if hand_back is not None:  # the last step before waiting: see the module's doc
                try:  # noqa: SIM105 - a try is free; suppress() costs a context manager
                    hand_back()
                except BaseException:  # hand-backs report their own errors
                    pass
            # an idle worker keeps nothing of its last job (its result, its caller's loop)
            work = hand_back = None
            work = self._next_work(me)

    def _next_work(self, me: _PipeWorker | _LockWorker) -> _Work | None:
        """Wait for a job handed to this worker; None once it has left the pool (idle too long).

        A job is set (under the lock) before its wake-up is sent. A wake-up finding no job is a
        late one of a job already run (see below): skipped."""
        while True:
            if me.wait(self._idle_ms):
                work = me.work
                if work is not None:
                    return work
                continue
            with self._lock:
                if me in self._idle:  # still nobody's: this worker leaves the pool
                    self._idle.remove(me)
                    me.close()
                    return None
                work = me.work
                if work is None:  # taken, then the caller was interrupted before the handover
                    self._busy.discard(me)
                    me.close()
                    return None
            # handed a job just as it expired: its wake-up is due, bounded in case an interrupt
            # in the caller lost it; the job runs either way
            me.wait(self._idle_ms)
            return work


_pool = DaemonPool()


def daemon_pool() -> DaemonPool:
    """The process-wide pool that runs blocking user code."""
    return _pool


__all__ = ["IDLE_SECONDS", "DaemonPool", "HandBack", "Job", "daemon_pool"]
