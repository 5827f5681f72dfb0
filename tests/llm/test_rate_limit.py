"""Rate limits: the bucket arithmetic as a table on a fake clock, then real waits that are
cancellable and never fail."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from agentensemble import LLM, Ensemble, RateLimit, RateLimitedModel, Task, Workflow
from agentensemble.llm.rate_limit import RateLimiter, estimate_tokens, limiter_of
from agentensemble.testing import FunctionChatModel


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("limit", "calls", "waits"),
    [
        # one second's worth goes at once, the rest follow at the rate
        (RateLimit(requests_per_minute=60), [(0.0, 1)] * 4, [0, 1, 2, 3]),
        (RateLimit(requests_per_minute=120), [(0.0, 1)] * 5, [0, 0, 0.5, 1, 1.5]),
        (RateLimit(requests_per_minute=30), [(0.0, 1)] * 3, [0, 2, 4]),
        # time passing refills the bucket, up to its capacity only
        (RateLimit(requests_per_minute=60), [(0.0, 1), (5.0, 1), (5.0, 1)], [0, 0, 1]),
        # tokens: 600 a minute is 10 a second; a big call waits for its tokens to accrue
        (RateLimit(tokens_per_minute=600), [(0.0, 5), (0.0, 10), (0.0, 1)], [0, 0.5, 0.6]),
        (RateLimit(tokens_per_minute=600), [(0.0, 30)], [2]),
        # both: the longer wait wins
        (
            RateLimit(requests_per_minute=600, tokens_per_minute=60),
            [(0.0, 1), (0.0, 2)],
            [0, 2],
        ),
    ],
    ids=["60rpm", "120rpm", "30rpm", "refill", "tokens", "big call", "both"],
)
def test_reservations_follow_the_bucket(
    limit: RateLimit, calls: list[tuple[float, int]], waits: list[float]
) -> None:
    clock = FakeClock()
    limiter = RateLimiter(limit, clock=clock)
    got = []
    for at, tokens in calls:
        clock.now = at
        got.append(limiter.reserve(tokens))
    assert got == pytest.approx(waits)


def test_tokens_are_settled_with_what_the_call_really_used() -> None:
    clock = FakeClock()
    limiter = RateLimiter(RateLimit(tokens_per_minute=600), clock=clock)
    assert limiter.reserve(10) == 0
    limiter.settle(estimated=10, used=30)  # 20 more than reserved: 2 s of debt
    assert limiter.reserve(1) == pytest.approx(2.1)
    limiter.settle(estimated=1, used=0)  # no usage reported: the estimate stands
    assert limiter.reserve(1) == pytest.approx(2.2)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "requests_per_minute or tokens_per_minute"),
        ({"requests_per_minute": 0}, "greater than 0"),
        ({"tokens_per_minute": -5}, "greater than 0"),
    ],
)
def test_a_rate_limit_must_limit_something(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RateLimit(**settings)


def test_estimate_counts_four_characters_a_token() -> None:
    assert estimate_tokens([{"role": "user", "content": "x" * 40}, {"role": "tool"}]) == 11


def test_each_llm_object_has_its_own_bucket() -> None:
    limit = RateLimit(requests_per_minute=60)
    one = LLM("openai/x", rate_limit=limit)
    other = LLM("openai/x", rate_limit=limit)

    assert limiter_of(one) is limiter_of(one)
    assert limiter_of(one) is not limiter_of(other)
    assert limiter_of(LLM("openai/x")) is None


def test_a_limiter_is_held_beside_the_model_not_written_onto_it() -> None:
    import gc

    from agentensemble.llm import rate_limit

    class Model:  # a user's ChatModel: nothing of ours is set on it
        rate_limit = RateLimit(requests_per_minute=60)

    class Slotted:  # cannot be weakly referenced: kept, with its limiter
        __slots__ = ()
        rate_limit = RateLimit(requests_per_minute=60)

    model, slotted = Model(), Slotted()
    limiter = limiter_of(model)
    assert limiter is not None and limiter_of(model) is limiter
    assert vars(model) == {}
    assert limiter_of(slotted) is limiter_of(slotted) is not None
    key = id(model)
    del model
    gc.collect()
    assert key not in rate_limit._limiters


@pytest.mark.anyio
async def test_a_waiting_call_is_cancellable_and_gives_its_place_back() -> None:
    limiter = RateLimiter(RateLimit(requests_per_minute=60))
    await limiter.acquire(1)  # the burst of one
    waiter = asyncio.ensure_future(limiter.acquire(1))  # must wait about a second
    await asyncio.sleep(0)
    assert not waiter.done()

    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter

    # the cancelled reservation was returned: the next caller waits one slot (at most a
    # second, less the time passed), not two
    assert limiter.reserve(1) <= 1.0


@pytest.mark.anyio
async def test_a_wrapped_model_waits_instead_of_failing() -> None:
    starts: list[float] = []

    async def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        starts.append(time.monotonic())
        return "ok"

    model = RateLimitedModel(FunctionChatModel(answer), RateLimit(requests_per_minute=120))
    tasks = [Task(description=f"task {i}") for i in range(4)]

    result = await Ensemble(tasks=tasks, llm=model, workflow=Workflow.PARALLEL).arun()

    assert [o.raw for o in result.task_outputs] == ["ok"] * 4
    # two a second: a burst of two, then one every half second (lower bounds only)
    offsets = [start - starts[0] for start in starts]
    assert offsets[2] >= 0.45 and offsets[3] >= 0.95, offsets


@pytest.mark.anyio
async def test_a_wrapped_model_keeps_what_it_says_about_response_format() -> None:
    class Native(FunctionChatModel):
        def supports_response_format(self) -> bool:
            return True

    plain = RateLimitedModel(FunctionChatModel(lambda m, t: "x"), RateLimit(tokens_per_minute=60))
    native = RateLimitedModel(Native(lambda m, t: "x"), RateLimit(tokens_per_minute=60))

    assert await plain.supports_response_format() is False
    assert await native.supports_response_format() is True


@given(
    per_minute=st.sampled_from([6.0, 30.0, 60.0, 120.0, 600.0]),
    arrivals=st.lists(st.floats(min_value=0, max_value=30), min_size=1, max_size=40),
)
def test_no_window_ever_holds_more_starts_than_the_bucket_allows(
    per_minute: float, arrivals: list[float]
) -> None:
    """Whatever the arrivals, the starts in any window of w seconds are at most one bucket plus
    the rate times w; and nobody waits when the bucket had room."""
    clock = FakeClock()
    limiter = RateLimiter(RateLimit(requests_per_minute=per_minute), clock=clock)
    rate = per_minute / 60
    capacity = max(1.0, rate)
    starts = []
    for at in sorted(arrivals):
        clock.now = at
        starts.append(at + limiter.reserve(1))
    starts.sort()
    for i, first in enumerate(starts):
        for j in range(i, len(starts)):
            window = starts[j] - first
            assert j - i + 1 <= capacity + rate * window + 1e-6
