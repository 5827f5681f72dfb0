"""``aask`` / ``ask``: any handler, the timeout backstop, ``on_timeout``, and bad return values."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from agentensemble.errors import ConfigurationError
from agentensemble_review import (
    AutoApproveReviewHandler,
    Continue,
    Edit,
    ExitEarly,
    InvalidReviewDecisionError,
    OnTimeoutAction,
    ReviewDecision,
    ReviewHandler,
    ReviewRequest,
    ReviewTimeoutError,
    ReviewTiming,
    aask,
    apply_on_timeout,
    ask,
)
from agentensemble_review.handler import AsyncReviewHandler

# Upper bounds on a wait tell "stopped at the timeout" from "waited for the late handler".
# The late handler takes LATE seconds, far beyond timeout + MARGIN, so the slack a busy shared
# machine needs never blurs the two.
MARGIN = 3.0
LATE = 30.0


def request(
    timeout: float = 5.0, on_timeout: OnTimeoutAction = OnTimeoutAction.EXIT_EARLY
) -> ReviewRequest:
    return ReviewRequest(
        timing=ReviewTiming.AFTER_EXECUTION,
        task_description="Summarise the report",
        output="draft",
        timeout=timedelta(seconds=timeout),
        on_timeout=on_timeout,
    )


class SyncHandler:
    def __init__(self, answer: Any, delay: float = 0.0) -> None:
        self.answer, self.delay = answer, delay
        self.threads: list[str] = []

    def review(self, request: ReviewRequest) -> Any:
        self.threads.append(threading.current_thread().name)
        time.sleep(self.delay)
        return self.answer


class AsyncHandler:
    def __init__(self, answer: Any, delay: float = 0.0) -> None:
        self.answer, self.delay = answer, delay

    async def areview(self, request: ReviewRequest) -> Any:
        await asyncio.sleep(self.delay)
        return self.answer


class AsyncReviewMethodHandler:
    """A user mistake we tolerate: ``async def review`` instead of ``areview``."""

    def __init__(self, answer: Any, delay: float = 0.0) -> None:
        self.answer, self.delay = answer, delay

    async def review(self, request: ReviewRequest) -> Any:
        await asyncio.sleep(self.delay)
        return self.answer


class BothHandler(SyncHandler):
    """Has both methods; async callers must prefer ``areview``."""

    async def areview(self, request: ReviewRequest) -> Any:
        return Edit("from areview")


KINDS: dict[str, Callable[[Any, float], Any]] = {
    "sync": SyncHandler,
    "async": AsyncHandler,
    "async-review": AsyncReviewMethodHandler,
}


def test_protocols_are_runtime_checkable() -> None:
    assert isinstance(SyncHandler(Continue()), ReviewHandler)
    assert isinstance(AsyncHandler(Continue()), AsyncReviewHandler)
    assert isinstance(AutoApproveReviewHandler(), ReviewHandler)
    assert not isinstance(object(), ReviewHandler)


# -- apply_on_timeout ---------------------------------------------------------------------------


def test_apply_on_timeout_continue() -> None:
    assert apply_on_timeout(request(2, OnTimeoutAction.CONTINUE)) == Continue()


def test_apply_on_timeout_exit_early_is_marked_timed_out() -> None:
    decision = apply_on_timeout(request(2, OnTimeoutAction.EXIT_EARLY))
    assert decision == ExitEarly("Review timed out after 2s", timed_out=True)


def test_apply_on_timeout_fail_raises() -> None:
    req = request(120, OnTimeoutAction.FAIL)
    with pytest.raises(ReviewTimeoutError, match="Review timed out after 2m") as info:
        apply_on_timeout(req)
    assert info.value.request is req


def test_apply_on_timeout_custom_reason() -> None:
    decision = apply_on_timeout(request(), reason="webhook unreachable")
    assert decision == ExitEarly("webhook unreachable", timed_out=True)


# -- aask ---------------------------------------------------------------------------------------

DECISIONS = [Continue(), Edit("better draft"), ExitEarly("not good")]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: d.decision)
async def test_aask_returns_the_handlers_decision(kind: str, decision: ReviewDecision) -> None:
    assert await aask(KINDS[kind](decision, 0.0), request()) == decision


@pytest.mark.anyio
async def test_aask_runs_sync_handlers_off_the_event_loop() -> None:
    handler = SyncHandler(Continue())
    await aask(handler, request())
    assert len(handler.threads) == 1
    assert handler.threads[0].startswith("agentensemble-review-")


@pytest.mark.anyio
async def test_aask_prefers_areview() -> None:
    assert await aask(BothHandler(Continue()), request()) == Edit("from areview")


@pytest.mark.anyio
async def test_a_slow_sync_handler_does_not_block_the_loop() -> None:
    # The handler waits for the loop to act; had it blocked the loop, it would wait in vain.
    loop_ran = threading.Event()

    class WaitsForTheLoop:
        def review(self, request: ReviewRequest) -> ReviewDecision:
            return Continue() if loop_ran.wait(30) else ExitEarly("the loop was blocked")

    async def nudge() -> None:
        await asyncio.sleep(0.01)
        loop_ran.set()

    results = await asyncio.gather(aask(WaitsForTheLoop(), request(60)), nudge())
    assert results[0] == Continue()


@pytest.mark.anyio
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (OnTimeoutAction.CONTINUE, Continue()),
        (OnTimeoutAction.EXIT_EARLY, ExitEarly("Review timed out after 0.1s", timed_out=True)),
        (OnTimeoutAction.FAIL, ReviewTimeoutError),
    ],
    ids=["continue", "exit_early", "fail"],
)
async def test_aask_backstop_applies_on_timeout(
    kind: str, action: OnTimeoutAction, expected: Any
) -> None:
    handler = KINDS[kind](Edit("too late"), LATE)
    started = time.monotonic()
    if expected is ReviewTimeoutError:
        with pytest.raises(ReviewTimeoutError, match=r"timed out after 0\.1s"):
            await aask(handler, request(0.1, action))
    else:
        assert await aask(handler, request(0.1, action)) == expected
    assert time.monotonic() - started < 0.1 + MARGIN


@pytest.mark.anyio
@pytest.mark.parametrize("kind", list(KINDS))
async def test_aask_zero_timeout_waits_forever(kind: str) -> None:
    # A handler slower than the grace period still gets its answer through: no backstop at all.
    handler = KINDS[kind](Edit("slow but sure"), 0.35)
    assert await aask(handler, request(0)) == Edit("slow but sure")


BAD_VALUES = [None, "continue", {"decision": "continue"}, True, 1, Continue]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("bad", BAD_VALUES, ids=repr)
async def test_aask_rejects_a_non_decision(kind: str, bad: Any) -> None:
    with pytest.raises(InvalidReviewDecisionError, match="Nothing was approved"):
        await aask(KINDS[kind](bad, 0.0), request())


@pytest.mark.anyio
async def test_aask_rejects_a_coroutine_from_a_sync_review() -> None:
    class Confused:
        def review(self, request: ReviewRequest) -> Any:
            async def later() -> ReviewDecision:
                return Continue()

            return later()

    with pytest.raises(InvalidReviewDecisionError, match="returned a coroutine"):
        await aask(Confused(), request())  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", list(KINDS))
async def test_aask_propagates_a_handler_error(kind: str) -> None:
    class Boom(Exception):
        pass

    class Failing:
        def review(self, request: ReviewRequest) -> ReviewDecision:
            raise Boom("reviewer crashed")

        async def areview(self, request: ReviewRequest) -> ReviewDecision:
            raise Boom("reviewer crashed")

    with pytest.raises(Boom):
        await aask(Failing(), request())


@pytest.mark.anyio
async def test_aask_rejects_an_object_that_is_no_handler() -> None:
    with pytest.raises(ConfigurationError, match="not a review handler"):
        await aask(object(), request())  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_cancelling_aask_cancels_the_handler() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    class Waiting:
        async def areview(self, request: ReviewRequest) -> ReviewDecision:
            started.set()
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return Continue()

    task = asyncio.ensure_future(aask(Waiting(), request(60)))
    await asyncio.wait_for(started.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(cancelled.wait(), 30)


# -- ask ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: d.decision)
def test_ask_returns_the_handlers_decision(kind: str, decision: ReviewDecision) -> None:
    assert ask(KINDS[kind](decision, 0.0), request()) == decision


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (OnTimeoutAction.CONTINUE, Continue()),
        (OnTimeoutAction.EXIT_EARLY, ExitEarly("Review timed out after 0.1s", timed_out=True)),
        (OnTimeoutAction.FAIL, ReviewTimeoutError),
    ],
    ids=["continue", "exit_early", "fail"],
)
def test_ask_backstop_applies_on_timeout(kind: str, action: OnTimeoutAction, expected: Any) -> None:
    handler = KINDS[kind](Edit("too late"), LATE)
    started = time.monotonic()
    if expected is ReviewTimeoutError:
        with pytest.raises(ReviewTimeoutError):
            ask(handler, request(0.1, action))
    else:
        assert ask(handler, request(0.1, action)) == expected
    assert time.monotonic() - started < 0.1 + MARGIN


@pytest.mark.parametrize("kind", list(KINDS))
def test_ask_zero_timeout_waits_forever(kind: str) -> None:
    assert ask(KINDS[kind](Edit("slow"), 0.35), request(0)) == Edit("slow")


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("bad", BAD_VALUES, ids=repr)
def test_ask_rejects_a_non_decision(kind: str, bad: Any) -> None:
    with pytest.raises(InvalidReviewDecisionError):
        ask(KINDS[kind](bad, 0.0), request())


def test_ask_keeps_a_handlers_own_timeout_error() -> None:
    class Raises:
        def review(self, request: ReviewRequest) -> ReviewDecision:
            raise TimeoutError("the handler's own, not the backstop")

    with pytest.raises(TimeoutError, match="handler's own"):
        ask(Raises(), request(5))


@pytest.fixture
def loop_in_thread() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def test_ask_with_a_loop_runs_areview_on_that_loop(
    loop_in_thread: asyncio.AbstractEventLoop,
) -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    class Recording:
        async def areview(self, request: ReviewRequest) -> ReviewDecision:
            seen.append(asyncio.get_running_loop())
            return Edit("on the loop")

    assert ask(Recording(), request(), loop=loop_in_thread) == Edit("on the loop")
    assert seen == [loop_in_thread]


def test_ask_with_a_loop_applies_the_backstop(loop_in_thread: asyncio.AbstractEventLoop) -> None:
    started = time.monotonic()
    decision = ask(AsyncHandler(Continue(), LATE), request(0.3), loop=loop_in_thread)
    assert decision == ExitEarly("Review timed out after 0.3s", timed_out=True)
    assert time.monotonic() - started < 0.3 + MARGIN


@pytest.mark.anyio
async def test_ask_on_the_loops_own_thread_is_refused() -> None:
    with pytest.raises(RuntimeError, match="deadlock"):
        ask(AsyncHandler(Continue()), request(), loop=asyncio.get_running_loop())


@pytest.mark.anyio
async def test_ask_from_inside_a_running_loop_still_works() -> None:
    # Sync code called (badly) from a coroutine: the async handler runs on a private loop.
    assert ask(AsyncHandler(Edit("private loop")), request()) == Edit("private loop")
