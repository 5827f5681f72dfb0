"""Sync code and the event loop: blocking calls in pooled daemon threads, coroutines from sync
code.

A worker hands its result back to the loop through the loop's *inbox*: a deque of finished
calls and one wake-up descriptor (an ``eventfd`` on Linux, a pipe elsewhere) that the loop
watches with ``add_reader``, made once per loop on its first sync call. Waking the loop costs
one ``write`` and one ``read``; ``call_soon_threadsafe`` goes through asyncio's self-pipe
socket (a ``send``, then ``recv`` until it fails with ``EAGAIN``) and builds a handle per call:
about a quarter of the hand-off's CPU (benchmarks/RESULTS.md, the sync tool's hand-off). A loop
that cannot watch a descriptor (``add_reader`` not implemented; any loop on Windows, where a
selector loop watches sockets only), cannot be weakly referenced, or a process out of
descriptors falls back to ``call_soon_threadsafe``. The inbox's descriptor is closed when its
loop is garbage collected, and a forked child closes the parent's.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import os
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from agentensemble._base.threads import _ONE, HandBack, daemon_pool

T = TypeVar("T")


async def in_worker_thread(fn: Callable[..., T], /, *args: Any) -> T:
    """Await blocking ``fn(*args)`` run in a pooled daemon thread (context variables carry over).

    Like ``asyncio.to_thread``, it keeps the event loop free; unlike it, the thread is no
    worker of the loop's default executor. Python cannot stop a thread, so a cancelled run
    (Ctrl-C) leaves a sync tool body that is already running to finish on its own; with
    ``to_thread`` ``asyncio.run`` and the interpreter's exit would both wait for it first.
    The result of a call nobody awaits any more is dropped. See ``_pool`` for the pool.
    """
    loop = asyncio.get_running_loop()
    call = _Call(loop, fn, args)
    # the result goes back as the worker's hand-back: once it is idle again (see _pool)
    daemon_pool().run_soon(call.run, getattr(fn, "__qualname__", ""))
    try:
        result: T = await call.future
    except _Carried as carried:
        raise carried.exception from None
    return result


class _Call:
    """One blocking call: run in a worker (``run``), handed back (``hand_back``), settled on
    the loop (``settle``). One object per call instead of closures and partials."""

    __slots__ = ("args", "context", "error", "fn", "future", "inbox", "result")

    def __init__(self, loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], args: Any):
        self.future: asyncio.Future[Any] = loop.create_future()
        self.inbox = _inbox(loop)
        self.context = contextvars.copy_context()
        self.fn = fn
        self.args = args
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> HandBack | None:
        """In the worker: the body, unless the caller was cancelled before it started."""
        if self.future.done():  # cancelled before a worker picked it up: the body never starts
            return None
        try:
            self.result = self.context.run(self.fn, *self.args)
        except (GeneratorExit, StopIteration) as exc:  # see _Carried
            self.error = _Carried(exc)
        except BaseException as exc:
            self.error = exc
        return self.hand_back

    def hand_back(self) -> None:
        """In the worker, once it is idle again: wake the loop to settle the future."""
        inbox = self.inbox
        if inbox is not None:
            inbox.put(self)
            return
        try:  # noqa: SIM105 - a try is free; suppress() costs a context manager
            self.future.get_loop().call_soon_threadsafe(self.settle)
        except RuntimeError:  # the loop is closed: the run is over
            pass

    def settle(self) -> None:
        """On the loop: the call's result or error into its future (cancelled: dropped)."""
        future, result, error = self.future, self.result, self.error
        self.result = self.error = None  # the future holds them: no cycle through a traceback
        if future.done():  # cancelled meanwhile: nobody wants the result
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


class _Carried(Exception):
    """Carries a GeneratorExit or StopIteration out of a worker thread. Delivered through a
    future, the task would throw a GeneratorExit into the awaiting coroutine chain, and Python
    treats a thrown GeneratorExit as ``close()``: every caller's handler would be skipped; a
    future refuses a StopIteration outright (the call would never end). Raised again here, it
    unwinds normally (a StopIteration as the ``RuntimeError`` Python makes of one leaving a
    coroutine) and the caller's layer can make it the call's failure."""

    def __init__(self, exception: GeneratorExit | StopIteration) -> None:
        super().__init__(str(exception))
        self.exception = exception


def _wake_fds() -> tuple[int, int]:
    """A non-blocking wake-up descriptor pair (read end, write end); one eventfd where the
    platform has it."""
    if hasattr(os, "eventfd"):
        fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        return fd, fd
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    return read_fd, write_fd


class _Inbox:
    """Finished calls waiting for one loop, and the descriptor that wakes it (see the module's
    doc). Holds no reference to its loop: it lives as long as the loop, not longer."""

    __slots__ = ("_items", "_read_fd", "_write_fd", "closed")

    def __init__(self) -> None:
        self._read_fd, self._write_fd = _wake_fds()
        self._items: collections.deque[_Call] = collections.deque()
        self.closed = False

    def put(self, call: _Call) -> None:
        """From any thread: queue ``call`` and wake the loop (the write lets go of the GIL)."""
        self._items.append(call)
        self.wake()

    def wake(self) -> None:
        if self.closed:  # its loop is gone (or this is a forked child): the number may be reused
            return
        try:  # noqa: SIM105 - a try is free; suppress() costs a context manager
            os.write(self._write_fd, _ONE)
        except OSError:  # full (the loop is woken already) or closed with its loop
            pass

    def drain(self) -> None:
        """On the loop (its reader): settle every queued call. A call queued after the read
        wrote again, so it is settled here or on the next wake-up; if this is cut short, the
        loop is woken again for what is left."""
        try:  # noqa: SIM105 - a try is free; suppress() costs a context manager
            os.read(self._read_fd, 4096)
        except OSError:  # nothing to read: a wake-up already taken by an earlier drain
            pass
        items = self._items
        try:
            while items:
                items.popleft().settle()
        finally:
            if items:
                self.wake()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for fd in {self._read_fd, self._write_fd}:
            try:  # noqa: SIM105 - a try is free; suppress() costs a context manager
                os.close(fd)
            except OSError:
                pass


# id(loop) -> (a weak reference to the loop, its inbox); an entry goes when its loop does
_inboxes: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop], _Inbox]] = {}
_no_inbox: set[type] = set()  # loop types that cannot watch a descriptor or be weakly referenced
# Windows: a selector loop there watches sockets only (a pipe would break its select)
_CAN_WATCH = os.name == "posix"


def _inbox(loop: asyncio.AbstractEventLoop) -> _Inbox | None:
    """``loop``'s inbox, made on its first call (on the loop's own thread); None: fall back to
    ``call_soon_threadsafe``."""
    entry = _inboxes.get(id(loop))
    if entry is not None and entry[0]() is loop:
        return entry[1]
    if not _CAN_WATCH or type(loop) in _no_inbox:
        return None
    return _new_inbox(loop)


def _new_inbox(loop: asyncio.AbstractEventLoop) -> _Inbox | None:
    key = id(loop)

    def forget(ref: weakref.ref[asyncio.AbstractEventLoop]) -> None:  # the loop is gone
        # no lock (this may run in a garbage collection anywhere): while the loop is being
        # freed no other object can have its id, so no other entry can be under this key
        if _inboxes.get(key, (None,))[0] is ref:
            _inboxes.pop(key, None)
        inbox.close()

    try:
        inbox = _Inbox()
    except OSError:  # out of descriptors: this call goes through call_soon_threadsafe
        return None
    try:
        ref = weakref.ref(loop, forget)
        # in an empty context: the reader's handle keeps a copy of the context it was added in
        # for the loop's life, and the first caller's (its run's) values must not stay with it
        # (a new one each time: a context entered in one thread cannot be entered in another)
        contextvars.Context().run(loop.add_reader, inbox._read_fd, inbox.drain)
    except (TypeError, NotImplementedError):  # no weak references, or no add_reader
        inbox.close()
        _no_inbox.add(type(loop))
        return None
    except OSError:  # the loop refused the descriptor (a loop carried across a fork)
        inbox.close()
        return None
    except BaseException:
        inbox.close()
        raise
    _inboxes[key] = (ref, inbox)  # only the loop's own thread adds its entry
    return inbox


def _forget_inboxes_in_child() -> None:
    """After ``os.fork()``: the parent's inboxes are not the child's (their descriptors are
    shared with the parent); close the child's copies. A loop used again in the child gets a
    fresh inbox."""
    for _, inbox in list(_inboxes.values()):
        inbox.close()
    _inboxes.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inboxes_in_child)


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
    result: T = daemon_pool().submit(asyncio.run, coro).result()
    return result
