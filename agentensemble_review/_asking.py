"""Asking a handler for a decision, safely: the one path the core and the tools use.

``aask`` (async) and ``ask`` (sync, for tool code in worker threads) call any handler, enforce
``request.timeout`` as a backstop, apply ``on_timeout`` when no decision came in time, and reject
anything that is not a decision. Nothing here ever turns a failure into approval.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from agentensemble._base.threads import DaemonPool
from agentensemble.errors import ConfigurationError
from agentensemble_review._log import get_logger
from agentensemble_review.errors import InvalidReviewDecisionError, ReviewTimeoutError
from agentensemble_review.handler import AnyReviewHandler
from agentensemble_review.models import (
    DECISION_TYPES,
    Continue,
    ExitEarly,
    OnTimeoutAction,
    ReviewDecision,
    ReviewRequest,
)

T = TypeVar("T")

_pool = DaemonPool("agentensemble-review")

BACKSTOP_GRACE_SECONDS = 0.2
"""How long past ``request.timeout`` a handler may take to report its own timeout before the
backstop gives up on it (handlers that time out themselves give a more precise reason)."""


def apply_on_timeout(request: ReviewRequest, *, reason: str | None = None) -> ReviewDecision:
    """The decision (or error) that ``request.on_timeout`` prescribes when no human answered.

    CONTINUE gives ``Continue()``; EXIT_EARLY gives ``ExitEarly(reason, timed_out=True)``; FAIL
    raises ``ReviewTimeoutError``. ``reason`` replaces the default "Review timed out after ...".
    """
    text = reason or f"Review timed out after {request.describe_timeout()}"
    if request.on_timeout is OnTimeoutAction.CONTINUE:
        return Continue()
    if request.on_timeout is OnTimeoutAction.EXIT_EARLY:
        return ExitEarly(text, timed_out=True)
    raise ReviewTimeoutError(text, request=request)


def check_decision(value: object, handler: object) -> ReviewDecision:
    """``value`` if it is a decision; otherwise a clear ``InvalidReviewDecisionError``."""
    if isinstance(value, DECISION_TYPES):
        return value
    name = type(handler).__name__
    if inspect.iscoroutine(value):
        value.close()
        raise InvalidReviewDecisionError(
            f"Review handler {name}.review returned a coroutine; define `async def areview` for "
            "an async handler. Nothing was approved."
        )
    shown = repr(value)
    if len(shown) > 100:
        shown = shown[:100] + "..."
    raise InvalidReviewDecisionError(
        f"Review handler {name} returned {shown} ({type(value).__name__}); expected Continue(), "
        "Edit(revised_output=...) or ExitEarly(reason=...). Nothing was approved."
    )


_Call = Callable[[ReviewRequest], Any]


def _async_method(handler: object) -> _Call | None:
    areview: _Call | None = getattr(handler, "areview", None)
    if callable(areview):
        return areview
    review: _Call | None = getattr(handler, "review", None)
    if callable(review) and inspect.iscoroutinefunction(review):
        return review
    return None


def _sync_method(handler: object) -> _Call | None:
    review: _Call | None = getattr(handler, "review", None)
    if callable(review) and not inspect.iscoroutinefunction(review):
        return review
    return None


def _not_a_handler(handler: object) -> ConfigurationError:
    return ConfigurationError(
        f"{type(handler).__name__} is not a review handler: it has neither review(request) "
        "nor async areview(request)"
    )


async def _call_async(call: Callable[[ReviewRequest], Any], request: ReviewRequest) -> Any:
    value = call(request)
    if inspect.isawaitable(value):
        value = await value
    return value


def start_daemon(fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
    """Run ``fn(*args)`` in a pooled daemon thread (with the caller's context variables).

    Daemon, unlike ``asyncio.to_thread``'s pool: a handler still blocked on a human after its
    timeout was applied must not keep the interpreter from exiting.
    """
    return _pool.submit(fn, *args)


def run_coroutine_sync(factory: Callable[[], Coroutine[Any, Any, T]], timeout: float | None) -> T:
    """Run a coroutine to completion from sync code, even if this thread runs an event loop.

    Raises ``concurrent.futures.TimeoutError`` if a helper thread overruns ``timeout``.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    future = start_daemon(lambda: asyncio.run(factory()))
    return future.result(timeout=timeout)


def _backstop(request: ReviewRequest) -> float | None:
    seconds = request.timeout_seconds
    return None if seconds is None else seconds + BACKSTOP_GRACE_SECONDS


def _overran(handler: object, request: ReviewRequest, started: float) -> ReviewDecision:
    get_logger().warning(
        "review.handler_overran_timeout",
        handler=type(handler).__name__,
        review_id=request.id,
        timeout_s=request.timeout_seconds,
        elapsed_s=round(time.monotonic() - started, 3),
        on_timeout=request.on_timeout.value,
    )
    return apply_on_timeout(request)


def _decided(
    handler: object, request: ReviewRequest, value: object, started: float
) -> ReviewDecision:
    decision = check_decision(value, handler)
    get_logger().debug(
        "review.decided",
        handler=type(handler).__name__,
        review_id=request.id,
        decision=decision.decision,
        elapsed_s=round(time.monotonic() - started, 3),
    )
    return decision


async def run_within(
    awaitable: Awaitable[T], limit: float | None
) -> tuple[bool, asyncio.Future[T]]:
    """Run ``awaitable`` for at most ``limit`` seconds (None: no limit).

    Returns (finished in time, task). An overrun task is cancelled and given a bounded moment to
    unwind; whatever it produces late is not to be used. Cancelling the caller cancels the work.
    """
    task = asyncio.ensure_future(awaitable)
    try:
        await asyncio.wait({task}, timeout=limit)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if task.done():
        return True, task
    task.cancel()
    await asyncio.wait({task}, timeout=0.1)  # bounded: the work may ignore cancellation
    return False, task


async def aask(handler: AnyReviewHandler, request: ReviewRequest) -> ReviewDecision:
    """Ask ``handler`` about ``request`` and return its decision, within ``request.timeout``.

    Uses ``areview`` when the handler has it, else runs ``review`` in a worker thread. A handler
    that overruns the timeout gets ``on_timeout`` applied (see ``apply_on_timeout``); a return
    value that is not a decision raises ``InvalidReviewDecisionError``; a handler's exception
    propagates. A zero timeout waits forever.
    """
    call = _async_method(handler)
    awaitable: Awaitable[Any]
    if call is not None:
        awaitable = _call_async(call, request)
    else:
        sync_call = _sync_method(handler)
        if sync_call is None:
            raise _not_a_handler(handler)
        awaitable = asyncio.wrap_future(start_daemon(sync_call, request))
    started = time.monotonic()
    get_logger().debug(
        "review.asked",
        handler=type(handler).__name__,
        review_id=request.id,
        timing=request.timing.value,
        tool_name=request.tool_name,
    )
    limit = _backstop(request)
    if limit is None:
        value = await awaitable
        return _decided(handler, request, value, started)
    in_time, task = await run_within(awaitable, limit)
    if not in_time:
        return _overran(handler, request, started)
    return _decided(handler, request, task.result(), started)


def ask(
    handler: AnyReviewHandler,
    request: ReviewRequest,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
) -> ReviewDecision:
    """Sync twin of ``aask``, for code running in a worker thread (a sync tool, say).

    With ``loop`` (the running event loop of the run, from another thread), an async handler's
    ``areview`` runs on that loop. Otherwise ``review`` is called (in a daemon thread when there
    is a timeout, so the backstop can give up on it), or ``areview`` runs on a private loop.
    """
    async_call = _async_method(handler)
    sync_call = _sync_method(handler)
    limit = _backstop(request)
    started = time.monotonic()
    if loop is not None and async_call is not None:
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        if current is loop:
            raise RuntimeError(
                "ask(..., loop=loop) called on that loop's own thread would deadlock; "
                "use `await aask(handler, request)` there"
            )
        cfuture = asyncio.run_coroutine_threadsafe(aask(handler, request), loop)
        return _wait_future(
            cfuture, None if limit is None else limit + 1.0, handler, request, started
        )
    if sync_call is not None:
        if limit is None:
            return _decided(handler, request, sync_call(request), started)
        return _wait_future(start_daemon(sync_call, request), limit, handler, request, started)
    if async_call is not None:
        return _wait_future(
            start_daemon(run_coroutine_sync, lambda: aask(handler, request), None),
            None if limit is None else limit + 1.0,
            handler,
            request,
            started,
        )
    raise _not_a_handler(handler)


def _wait_future(
    future: concurrent.futures.Future[Any],
    limit: float | None,
    handler: object,
    request: ReviewRequest,
    started: float,
) -> ReviewDecision:
    try:
        value = future.result(timeout=limit)
    except concurrent.futures.TimeoutError:
        if future.done():  # the handler itself raised a TimeoutError: not ours to reinterpret
            raise
        future.cancel()
        return _overran(handler, request, started)
    return _decided(handler, request, value, started)


__all__ = ["BACKSTOP_GRACE_SECONDS", "aask", "apply_on_timeout", "ask", "check_decision"]
