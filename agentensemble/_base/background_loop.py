"""The one long-lived event loop that sync ``run()`` calls share, in a daemon thread.

Why: ``asyncio.run`` per run made a fresh loop each time, and HTTP clients are bound to a loop
(litellm caches one per loop), so every run opened a new connection (a new TLS handshake against
a real provider) and kept the old client around. On one loop, clients and connections are reused.

What it keeps from ``asyncio.run``:

- works from any thread, including one already running a loop (Jupyter): the caller's thread
  blocks while the run goes on here, as before;
- Ctrl-C (or any exception raised into the waiting thread) cancels the run at once, waits a
  bounded moment for it to unwind, and propagates; a running sync tool is never waited for;
- context variables of the caller reach the run;
- after ``os.fork()`` the child gets a fresh loop on first use (the parent's thread does not exist
  there).

Errors propagate with a traceback that starts at the caller and has no loop internals in it.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import contextvars
import os
import signal
import threading
import types
import weakref
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from agentensemble._base.interrupts import keep_outputs
from agentensemble._base.threads import daemon_pool

T = TypeVar("T")

CANCEL_GRACE_SECONDS = 5.0
"""How long an interrupted ``run()`` waits for the cancelled run to unwind before it raises."""

_INTERNAL_DIRS = tuple(
    str(Path(module.__file__).parent) + os.sep
    for module in (asyncio, concurrent.futures)
    if module.__file__
)
_THIS_FILE = __file__


_long_lived: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
"""The loops this module keeps between runs (the shared one, each thread's own)."""


def renew_default_executors() -> None:
    """A fresh default executor (``asyncio.to_thread``'s) for the running loop and every loop kept
    here. DBOS makes its worker pool the default executor of each loop it runs in and shuts that
    pool down when it is destroyed: without this, ``asyncio.to_thread`` on those loops fails for
    good ("cannot schedule new futures after shutdown") once a ``DurableRuntime`` has shut down in
    the process, and every later run there with it."""
    loops = set(_long_lived)
    with contextlib.suppress(RuntimeError):  # no running loop: only the kept ones
        loops.add(asyncio.get_running_loop())
    for loop in loops:
        if not loop.is_closed():
            loop.set_default_executor(
                concurrent.futures.ThreadPoolExecutor(thread_name_prefix="asyncio")
            )


class _LoopThread:
    """Owns the shared loop and its daemon thread, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._loop = None  # the parent's loop thread does not exist here; never touch it
        self._thread = None

    def get(self) -> asyncio.AbstractEventLoop:
        """The running shared loop, started if needed."""
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                loop = asyncio.new_event_loop()
                _long_lived.add(loop)
                started = threading.Event()
                self._thread = threading.Thread(
                    target=_serve, args=(loop, started), name="agentensemble-loop", daemon=True
                )
                self._thread.start()
                started.wait()
                self._loop = loop
            return self._loop


def _serve(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
    if hasattr(signal, "pthread_sigmask"):  # Ctrl-C belongs to the thread that called run()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    asyncio.set_event_loop(loop)
    loop.call_soon(started.set)
    loop.run_forever()


_shared = _LoopThread()


def run_on_background_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the shared loop and block until it is done; its result or its error."""
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    # outside the except block: no "no running event loop" chained into the run's errors
    loop = _shared.get()
    if running is loop:
        # sync run() from a coroutine on the shared loop itself (a nested ensemble in an async
        # tool): that loop cannot both wait and run it, so it runs on a fresh loop elsewhere
        nested: concurrent.futures.Future[T] = daemon_pool().submit(asyncio.run, coro)
        return _outcome(nested)
    finished = threading.Lock()  # released by the loop when the run's task is done
    finished.acquire()
    tasks: list[asyncio.Task[None]] = []
    outcome: _Outcome[T] = _Outcome()

    def start() -> None:  # on the loop, in a copy of the caller's context
        task = loop.create_task(_capture(coro, outcome))
        tasks.append(task)
        task.add_done_callback(lambda _: finished.release())

    loop.call_soon_threadsafe(start, context=contextvars.copy_context())
    try:
        with _interruptible(running):
            finished.acquire()  # a plain lock: the cheapest hand-back, Ctrl-C interrupts it
    except BaseException as stop:  # Ctrl-C (or another exception raised into this thread)
        loop.call_soon_threadsafe(_cancel, tasks)
        if finished.acquire(timeout=CANCEL_GRACE_SECONDS) and outcome.stopped_with is not None:
            keep_outputs(stop, outcome.stopped_with)  # what the cancelled run had finished
        raise
    if tasks[0].cancelled():
        raise asyncio.CancelledError
    return outcome.get()


class _ThreadLoop:
    """One thread's own event loop, kept between ``run()`` calls of that thread (so HTTP clients
    and their connections are reused) and closed when the thread ends."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        _long_lived.add(self.loop)
        self.pid = _pid

    def __del__(self) -> None:  # the thread's locals are dropped: its loop goes with them
        if self.pid == os.getpid() and not self.loop.is_running():
            self.loop.close()


_local = threading.local()
_pid = os.getpid()  # this process's id, kept by a fork hook: no system call per run


def _after_fork() -> None:
    global _pid
    _pid = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _thread_loop() -> _ThreadLoop:
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is None or holder.pid != _pid or holder.loop.is_closed():
        holder = _local.holder = _ThreadLoop()  # a forked child never touches the parent's
    return holder


def _close_main_thread_loop() -> None:
    """At exit: the main thread's loop closes its clients' connections, then itself."""
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is None or holder.pid != os.getpid() or holder.loop.is_running():
        return
    _local.holder = None
    with contextlib.suppress(Exception):
        holder.loop.run_until_complete(holder.loop.shutdown_asyncgens())
    holder.loop.close()


atexit.register(_close_main_thread_loop)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end for a sync caller; its result or its error.

    With no event loop running in this thread (a script, a worker thread), the run goes on this
    thread's own long-lived loop: no hand-off to another thread and back, which cost more than
    the framework's own work on a short run. Inside a running loop (Jupyter, a coroutine) that
    loop cannot wait for it, so it goes to the shared background loop
    (``run_on_background_loop``). Ctrl-C cancels the run, waits a bounded moment for it to
    unwind and raises ``KeyboardInterrupt`` carrying what it had finished; a second Ctrl-C
    raises at once.

    The loop runs with ``run_forever`` and the run's task stops it as its own last step
    (``_Outcome.finish``), in the loop pass where it ends: ``run_until_complete`` would wrap the
    task, add and remove a done callback, and take one more pass (a poll of the selector) only
    to run that callback.
    """
    if asyncio._get_running_loop() is not None:
        return run_on_background_loop(coro)
    loop = _thread_loop().loop
    outcome: _Outcome[T] = _Outcome()
    task = loop.create_task(_capture(coro, outcome))  # in a copy of the caller's context
    interrupted: list[bool] = []

    def on_sigint(signum: int, frame: types.FrameType | None) -> None:
        if interrupted or task.done():
            raise KeyboardInterrupt
        interrupted.append(True)
        task.cancel()
        loop.call_soon_threadsafe(give_up_later)  # also wakes the loop to see the cancellation

    def give_up_later() -> None:  # each checks its own run: a stale one never stops a later
        if task.done():  # cancelled before its first step: it never ran to stop the loop
            outcome.finish()
        else:
            loop.call_later(CANCEL_GRACE_SECONDS, lambda: None if task.done() else loop.stop())

    outcome.loop = loop
    previous = _take_sigint(on_sigint)
    try:
        loop.run_forever()
        if not task.done():  # stopped before the run ended (the grace ran out, or the run's own
            raise RuntimeError("Event loop stopped before Future completed.")  # code stopped it)
    except BaseException as stop:
        if not task.done():
            task.cancel()
            if not interrupted:  # raised from outside the run (a SIGINT handler of the user's
                _unwind(loop, task, outcome)  # own): it unwinds as on Ctrl-C, for a bounded time
                if outcome.stopped_with is not None:
                    keep_outputs(stop, outcome.stopped_with)
            if not task.done():  # a second Ctrl-C, or the grace ran out: this loop is given up
                _local.holder = None
            if interrupted and not isinstance(stop, KeyboardInterrupt):
                raise KeyboardInterrupt from None
            raise
        if not interrupted:
            raise
    finally:
        outcome.loop = None  # a stale stop request (a late callback) leaves later runs alone
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if interrupted:  # cancelled by Ctrl-C, whether the run ended cancelled or caught it
        interrupt = KeyboardInterrupt()
        if outcome.stopped_with is not None:
            keep_outputs(interrupt, outcome.stopped_with)  # what the cancelled run had finished
        raise interrupt from None
    if task.cancelled():  # the run cancelled itself: as run_until_complete did, raise that
        task.result()
    return outcome.get()


def _unwind(
    loop: asyncio.AbstractEventLoop, task: asyncio.Task[None], outcome: _Outcome[Any]
) -> None:
    """Let a cancelled ``task`` unwind on ``loop`` for at most the grace period (another
    interrupt ends the wait at once)."""
    task.add_done_callback(lambda _: outcome.finish())  # also when it never took a step
    timer = loop.call_later(CANCEL_GRACE_SECONDS, outcome.finish)
    with contextlib.suppress(BaseException):
        loop.run_forever()
    timer.cancel()


def _take_sigint(handler: Any) -> Any:
    """Install ``handler`` for SIGINT while a run goes on in the main thread; the handler it
    replaced (None when none was replaced: another thread, or a handler of the user's own)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return None
        return signal.signal(signal.SIGINT, handler)
    except (ValueError, AttributeError):
        return None


@contextlib.contextmanager
def _interruptible(running: asyncio.AbstractEventLoop | None) -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt in this thread while it waits for the run.

    Called from a coroutine of a loop run by ``asyncio.run`` (a notebook cell, an async main),
    asyncio's own SIGINT handler is installed: it only cancels that loop's main task, which is
    blocked right here, so the first Ctrl-C did nothing and the run went on to its end. While
    the run is waited for, the main thread's SIGINT raises KeyboardInterrupt instead.
    """
    if running is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        current = signal.getsignal(signal.SIGINT)
    except (ValueError, AttributeError):
        current = None
    if current in (None, signal.SIG_IGN, signal.SIG_DFL, signal.default_int_handler):
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, current)


def _cancel(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()


class _Outcome(Generic[T]):
    """A run's result or error, handed from the loop thread to the caller's thread."""

    def __init__(self) -> None:
        self.value: T | None = None
        self.error: BaseException | None = None
        self.stopped_with: list[Any] | None = None  # outputs finished before a cancellation
        self.loop: asyncio.AbstractEventLoop | None = None  # run_sync's loop, while it waits

    def finish(self) -> None:
        """The run is over: stop the loop ``run_sync`` is running for it, once."""
        loop, self.loop = self.loop, None
        if loop is not None:
            loop.stop()

    def get(self) -> T:
        if self.error is not None:
            error, self.error = self.error, None  # no reference cycle through the traceback
            _drop_loop_frames(error)
            raise error
        return self.value  # type: ignore[return-value]  # set: the run finished without error


async def _capture(coro: Coroutine[Any, Any, T], outcome: _Outcome[T]) -> None:
    """Run ``coro`` into ``outcome``. Anything it raises is caught here, SystemExit and
    KeyboardInterrupt included, which would otherwise stop the shared loop itself; only
    cancellation ends the task."""
    try:
        outcome.value = await coro
    except asyncio.CancelledError as cancelled:
        outcome.stopped_with = getattr(cancelled, "completed_outputs", None)
        raise
    except BaseException as error:
        outcome.error = error
    finally:
        outcome.finish()


def _outcome(future: concurrent.futures.Future[T]) -> T:
    error = future.exception()
    if error is None:
        result: T = future.result()
        return result
    _drop_loop_frames(error)
    raise error


def _drop_loop_frames(error: BaseException) -> None:
    """Remove asyncio and concurrent.futures frames from ``error`` and its chain, in place."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = _user_frames(current.__traceback__)
        current = current.__cause__ or current.__context__


def _user_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    kept: list[types.TracebackType] = []
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith(_INTERNAL_DIRS) and filename != _THIS_FILE:
            kept.append(tb)
        tb = tb.tb_next
    rebuilt: types.TracebackType | None = None
    for entry in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


__all__ = ["CANCEL_GRACE_SECONDS", "run_on_background_loop", "run_sync"]
