"""Running the tool calls of one model turn together, and stopping all of them together.

``asyncio.gather`` lets the other calls go on when one of them stops the run (ExitEarlyError, a
review error, a ConfigurationError): they would keep acting after ``arun()`` returned, and an
approval still pending among them could be granted and act. Here the first call that stops
the run cancels its siblings, marks the turn stopped (so a sync tool's approval answered later
approves nothing) and waits until every sibling has ended before the error goes on.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from agentensemble._interrupts import Interrupted, reraise_interrupt

T = TypeVar("T")


async def run_turn(calls: Sequence[Coroutine[Any, Any, T]], stopped: threading.Event) -> list[T]:
    """Run ``calls`` concurrently; their results in call order.

    When one raises, or this turn is cancelled, ``stopped`` is set, the calls still running are
    cancelled and awaited, and the first error (in call order) is raised.
    """
    # a tool's KeyboardInterrupt crosses the task boundary as Interrupted (see _interrupts)
    tasks = [asyncio.ensure_future(_carried(call)) for call in calls]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:  # this turn is cancelled (Ctrl-C, arun() cancelled)
        await _stop(tasks, stopped)
        raise
    failed = [task for task in tasks if task.done() and _raised(task)]
    if failed:
        await _stop(tasks, stopped)
        error = failed[0].exception()
        reraise_interrupt(error)  # Ctrl-C raised by a tool: stops the run as Ctrl-C does
        raise error  # type: ignore[misc]  # checked by _raised
    return [task.result() for task in tasks]


async def run_alone(call: Coroutine[Any, Any, T], stopped: threading.Event) -> T:
    """``run_turn`` of one call whose work on the event loop is all the framework's own (a
    sync tool's body runs in a worker thread, with a copy of the context variables): awaited
    in the turn's own task, not in a task of its own (about 20 us and two turns of the event
    loop fewer, per call).

    When it raises, or this turn is cancelled, ``stopped`` is set before the error goes on; the
    call has ended by then (there are no siblings to cancel). A KeyboardInterrupt goes on as
    itself, as ``run_turn`` raises it again.
    """
    try:
        return await call
    except BaseException:
        stopped.set()
        raise


async def run_in_order(
    calls: Sequence[Callable[[], Coroutine[Any, Any, T]]], stopped: threading.Event
) -> list[T]:
    """Run ``calls`` one after another, in call order; the first error stops the turn.

    For a checkpointed run whose calls make steps of their own (a delegation): their steps
    must start in the same order on every replay, which calls running at once cannot promise.
    """
    results: list[T] = []
    for call in calls:
        try:
            results.append(await call())
        except BaseException:
            stopped.set()
            raise
    return results


async def in_scope(scope: AbstractContextManager[Any], call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call`` inside ``scope`` (a branch of a durable run: see ``steps.branches``)."""
    with scope:
        return await call()


async def _carried(call: Coroutine[Any, Any, T]) -> T:
    try:
        return await call
    except KeyboardInterrupt as exc:
        raise Interrupted(exc) from None


def _raised(task: asyncio.Future[Any]) -> bool:
    return not task.cancelled() and task.exception() is not None


async def _stop(tasks: Sequence[asyncio.Future[Any]], stopped: threading.Event) -> None:
    """Mark the turn stopped, cancel what still runs and wait for it to end."""
    stopped.set()
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
    for task in tasks:  # retrieve every outcome so none is reported as never retrieved
        if task.done() and not task.cancelled():
            task.exception()


__all__ = ["run_alone", "run_in_order", "run_turn"]
