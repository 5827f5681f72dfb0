"""Client-side rate limits: one bucket per model object, shared by every task that uses it.

``RateLimit(requests_per_minute=..., tokens_per_minute=...)`` is the setting. A ``RateLimiter``
holds its buckets; a call reserves its share before it goes and waits (never fails) until the
reservation comes due. Each bucket holds one second's worth (at least one request), so a burst
of that size goes at once and the rest follow spaced at the rate: at 60 requests a minute, ten
concurrent calls start as one, then one a second. Tokens are reserved from an estimate of the
prompt (4 characters a token) and settled with the usage the provider reports; a call larger
than the bucket waits until its tokens have accrued. Waiting is an ``asyncio.sleep``:
cancelling the waiting task cancels the wait and gives the reservation back.

The buckets are guarded by a thread lock and read a monotonic clock, so one limiter may serve
runs on several event loops (``Ensemble.run`` from several threads) at once.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentensemble.llm.types import ChatModel, ChatResponse, Message, ToolSpec
from agentensemble.logging import get_logger

_log = get_logger()
CHARS_PER_TOKEN = 4


class RateLimit(BaseModel):
    """How much a model may be asked per minute; give either figure or both."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _some_limit(self) -> RateLimit:
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ValueError(
                "RateLimit needs requests_per_minute or tokens_per_minute (or both); "
                "for no limit pass rate_limit=None"
            )
        return self


class _Bucket:
    """A token bucket that may go into debt: reservations queue up in time, first come first."""

    def __init__(self, per_minute: float, now: float) -> None:
        self.rate = per_minute / 60.0  # units a second
        self.capacity = max(1.0, self.rate)  # one second's worth, at least one unit
        self.level = self.capacity
        self.stamp = now

    def _refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def reserve(self, amount: float, now: float) -> float:
        """Take ``amount`` now; the seconds until the bucket had it (0: go at once)."""
        self._refill(now)
        self.level -= amount
        return 0.0 if self.level >= 0 else -self.level / self.rate

    def give_back(self, amount: float, now: float) -> None:
        self._refill(now)
        self.level = min(self.capacity, self.level + amount)


class RateLimiter:
    """The buckets of one ``RateLimit``; ``acquire`` before a call, ``settle`` after it."""

    def __init__(self, limit: RateLimit, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._lock = threading.Lock()
        rpm, tpm, now = limit.requests_per_minute, limit.tokens_per_minute, clock()
        self._requests = _Bucket(rpm, now) if rpm else None
        self._tokens = _Bucket(tpm, now) if tpm else None

    def reserve(self, tokens: int) -> float:
        """Reserve one request and ``tokens``; the seconds to wait before sending."""
        with self._lock:
            now = self._clock()
            waits = [0.0]
            if self._requests is not None:
                waits.append(self._requests.reserve(1, now))
            if self._tokens is not None:
                waits.append(self._tokens.reserve(tokens, now))
            return max(waits)

    def give_back(self, tokens: int) -> None:
        """Undo a reservation whose call never went (its wait was cancelled)."""
        with self._lock:
            now = self._clock()
            if self._requests is not None:
                self._requests.give_back(1, now)
            if self._tokens is not None:
                self._tokens.give_back(tokens, now)

    def settle(self, estimated: int, used: int) -> None:
        """Charge the tokens a call really used instead of its estimate."""
        if self._tokens is None or used <= 0 or used == estimated:
            return
        with self._lock:
            now = self._clock()
            if used > estimated:
                self._tokens.reserve(used - estimated, now)
            else:
                self._tokens.give_back(estimated - used, now)

    async def acquire(self, tokens: int) -> None:
        """Wait until a call of ``tokens`` may go; cancellable, never fails."""
        wait = self.reserve(tokens)
        if wait <= 0:
            return
        _log.debug("rate limit: waiting", seconds=round(wait, 3))
        try:
            await asyncio.sleep(wait)
        except asyncio.CancelledError:
            self.give_back(tokens)
            raise

    async def run(
        self, call: Callable[[], Awaitable[ChatResponse]], messages: Sequence[Message]
    ) -> ChatResponse:
        """Wait for the buckets, make ``call``, settle the tokens it used."""
        estimated = estimate_tokens(messages)
        await self.acquire(estimated)
        response = await call()
        self.settle(estimated, response.usage.total_tokens)
        return response


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A rough count before the call (4 characters a token); settled with the real usage."""
    characters = sum(len(str(message.get("content") or "")) for message in messages)
    return characters // CHARS_PER_TOKEN + 1


CompleteMethod = TypeVar("CompleteMethod", bound=Callable[..., Awaitable[ChatResponse]])


def rate_limited(complete: CompleteMethod) -> CompleteMethod:
    """Decorate a model class's ``complete``: calls wait for the object's ``rate_limit``.

    The object's limiter is made on first use and kept on the object (one bucket per object).
    Retries inside ``complete`` belong to one reservation (they honour ``Retry-After``).
    """

    @functools.wraps(complete)
    async def limited(
        self: Any,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        **options: Any,
    ) -> ChatResponse:
        limiter = limiter_of(self)
        if limiter is None:
            return await complete(self, messages, tools=tools, **options)
        return await limiter.run(lambda: complete(self, messages, tools=tools, **options), messages)

    return cast("CompleteMethod", limited)


_making = threading.RLock()  # re-entered when a collected model drops its entry
#: each model object's limiter, by identity (models need not hash: ``LLM`` does not), held as
#: long as the object lives: nothing is written onto a model the package does not own
_limiters: dict[int, tuple[Any, RateLimiter]] = {}


def limiter_of(model: Any) -> RateLimiter | None:
    """The limiter of ``model`` (from its ``rate_limit``), made once per object and dropped
    with it."""
    limit = getattr(model, "rate_limit", None)
    if limit is None:
        return None
    held = _limiters.get(id(model))
    if held is not None and _alive(held[0]) is model:
        return held[1]
    with _making:
        held = _limiters.get(id(model))
        if held is not None and _alive(held[0]) is model:
            return held[1]
        limiter = RateLimiter(limit)
        _limiters[id(model)] = (_holder(model), limiter)
    return limiter


def _holder(model: Any) -> Any:
    """A weak reference to ``model`` that removes its entry when it goes; the object itself
    when it cannot be weakly referenced (kept then, as an attribute on it was)."""
    key = id(model)

    def gone(ref: weakref.ref[Any]) -> None:
        with _making:
            held = _limiters.get(key)
            if held is not None and held[0] is ref:  # not a later object given the same id
                del _limiters[key]

    try:
        return weakref.ref(model, gone)
    except TypeError:
        return model


def _alive(holder: Any) -> Any:
    return holder() if type(holder) is weakref.ref else holder


class RateLimitedModel:
    """Any ChatModel behind a rate limit: ``RateLimitedModel(model, RateLimit(...))``.

    Share one wrapper between agents to share one bucket.
    """

    def __init__(self, model: ChatModel, rate_limit: RateLimit) -> None:
        self.inner = model
        self.rate_limit = rate_limit
        self.limiter = RateLimiter(rate_limit)
        self.model = getattr(model, "model", type(model).__name__)

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        **options: Any,
    ) -> ChatResponse:
        return await self.limiter.run(
            lambda: self.inner.complete(messages, tools=tools, **options), messages
        )

    async def supports_response_format(self) -> bool:
        """As the wrapped model says: wrapping keeps native structured output."""
        from agentensemble.llm.response_format import supports_response_format

        return await supports_response_format(self.inner)

    def __repr__(self) -> str:
        return f"RateLimitedModel({self.inner!r}, {self.rate_limit!r})"


__all__ = [
    "RateLimit",
    "RateLimitedModel",
    "RateLimiter",
    "estimate_tokens",
    "limiter_of",
    "rate_limited",
]
