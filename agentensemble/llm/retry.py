"""Retrying provider calls: which failures are transient, how long to wait, what to raise.

Classification is pure (``is_retryable``, ``retry_after_seconds``) and duck-typed on status
codes and exception names, so it needs neither litellm nor openai imported. ``RetryPolicy`` runs
a call under tenacity with exponential backoff and jitter, honours ``Retry-After``, and turns
the final failure into ``LLMError`` with secrets redacted.
"""

from __future__ import annotations

import contextlib
import email.utils
import math
import random
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timezone
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from agentensemble.errors import LLMError
from agentensemble.llm._failures import RETRYABLE_STATUS, classify, describe, status_code_of
from agentensemble.logging import get_logger, redact_text

T = TypeVar("T")

# structlog over the stdlib "agentensemble" logger: silent unless the application shows it.
logger = get_logger()


def is_retryable(exc: BaseException) -> bool:
    """Whether another attempt may succeed: rate limits, 5xx, timeouts, connection errors.

    Never: 400/401/403/404, context window, content policy, a missing Python module or API key,
    text that cannot be encoded, a URL that cannot be sent to. Read from the whole exception
    chain (see ``_failures``): litellm reports many local failures as "HTTP 500".
    """
    return classify(exc).retryable


def _header(headers: Any, name: str) -> str | None:
    """Case-insensitive lookup in a dict, httpx.Headers or anything with ``items()``."""
    items = getattr(headers, "items", None)
    if not callable(items):
        return None
    try:
        pairs = list(items())
    except Exception:
        return None
    for pair in pairs:
        if isinstance(pair, tuple) and len(pair) == 2 and str(pair[0]).lower() == name:
            return str(pair[1])
    return None


def _response_headers(exc: BaseException) -> list[Any]:
    return [
        getattr(exc, "litellm_response_headers", None),  # where litellm keeps provider headers
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ]


def parse_retry_after(value: str, *, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` value: delta-seconds or an HTTP date (past dates = 0)."""
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = now or datetime.now(timezone.utc)
    return max(0.0, (when - current).total_seconds())


def retry_after_seconds(exc: BaseException, *, now: datetime | None = None) -> float | None:
    """How long the provider asked us to wait (``retry-after-ms`` or ``Retry-After``), if it did."""
    for headers in _response_headers(exc):
        millis = _header(headers, "retry-after-ms")
        if millis is not None:
            parsed = parse_retry_after(millis)
            if parsed is not None:
                return parsed / 1000.0
        value = _header(headers, "retry-after")
        if value is not None:
            parsed = parse_retry_after(value, now=now)
            if parsed is not None:
                return parsed
    return None


def redact_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """Hide API keys and Authorization values: the given secrets, then the one redaction policy
    (``agentensemble.redaction``: registered secrets and key shapes, ``sk-...``, ``Bearer ...``,
    ``api_key=...``)."""
    return redact_text(text, secrets)


def describe_error(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """``ErrorType (HTTP 429): message`` with secrets redacted and the length bounded.

    The type is canonical and the status is one really received (see ``_failures``), so a
    refused connection never reads "HTTP 500" and both model lanes say the same thing.
    """
    return redact_secrets(describe(classify(exc)), secrets)


class RetryPolicy(BaseModel):
    """How provider calls are retried: attempts, exponential backoff with jitter, Retry-After.

    The n-th wait is ``min(max_backoff, initial_backoff * multiplier ** (n - 1))``, reduced by a
    random fraction up to ``jitter``. A provider's ``Retry-After`` replaces it, capped at
    ``max_retry_after``.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    max_attempts: int = Field(
        default=4, ge=1, description="Total attempts, the first one included."
    )
    initial_backoff: float = Field(default=0.5, ge=0)
    max_backoff: float = Field(default=20.0, ge=0)
    multiplier: float = Field(default=2.0, ge=1)
    jitter: float = Field(
        default=0.5, ge=0, le=1, description="Fraction of the wait drawn at random."
    )
    max_retry_after: float = Field(default=60.0, ge=0, description="Cap on a honoured Retry-After.")

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based), jitter included."""
        base = min(self.max_backoff, self.initial_backoff * self.multiplier ** max(0, attempt - 1))
        return base * (1.0 - self.jitter * random.random())

    def wait_for(self, exc: BaseException | None, attempt: int) -> float:
        """The wait before the next attempt: Retry-After if the provider sent one, else backoff."""
        if exc is not None:
            asked = retry_after_seconds(exc)
            if asked is not None:
                return min(asked, self.max_retry_after)
        return self.backoff(attempt)

    async def run(
        self,
        call: Callable[[], Awaitable[T]],
        *,
        label: str = "llm",
        secrets: Iterable[str] = (),
        endpoint: str | None = None,
    ) -> T:
        """Await ``call()`` until it succeeds or the policy gives up; then raise ``LLMError``.

        ``endpoint`` (the configured ``api_base``) is named in the error when the server could
        not be reached.
        """
        # The first attempt runs bare: almost every call succeeds, and tenacity's loop (its
        # state, a Future with its lock, closures in reference cycles) costs CPU and garbage
        # collection on every call when a thousand runs are in flight. A first failure hands
        # over to tenacity (``_retry``), which meets it again as its own attempt 1: the waits,
        # the log lines and the attempt count are the ones tenacity alone gave.
        try:
            return await call()
        except LLMError:
            raise
        except Exception as exc:
            failure: Exception = exc
        return await self._retry(failure, call, label=label, secrets=secrets, endpoint=endpoint)

    async def _retry(
        self,
        failure: Exception,
        call: Callable[[], Awaitable[T]],
        *,
        label: str,
        secrets: Iterable[str],
        endpoint: str | None,
    ) -> T:
        """``run`` after its first attempt failed with ``failure``: tenacity from attempt 1."""
        hidden = tuple(s for s in secrets if s)
        first: Exception | None = failure
        del failure
        attempts = 0

        async def replay() -> T:
            nonlocal first
            if first is not None:
                failed, first = first, None
                raise failed
            return await call()

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome is not None else None
            return self.wait_for(exc, state.attempt_number)

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            failure = classify(exc) if exc is not None else None
            logger.warning(
                "llm_retry",
                model=label,
                attempt=state.attempt_number,
                max_attempts=self.max_attempts,
                wait=round(state.next_action.sleep if state.next_action else 0.0, 3),
                error_type=failure.name if failure is not None else None,
                status_code=failure.status if failure is not None else None,
            )

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=wait,
            retry=retry_if_exception(is_retryable),
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    return await replay()
        except LLMError:
            raise
        except Exception as exc:
            scrub_chain(exc, hidden)
            raise to_llm_error(
                exc, attempts=attempts, label=label, secrets=hidden, endpoint=endpoint
            ) from exc
        raise AssertionError("unreachable: tenacity neither returned nor raised")


def scrub_chain(exc: BaseException, secrets: Iterable[str] = ()) -> None:
    """Redact secrets, in place, from the text of ``exc`` and of every exception chained to it.

    The provider's exception stays the ``LLMError``'s ``__cause__`` for debugging, but providers
    echo keys (``Incorrect API key provided: sk-...``) and a printed traceback shows every
    message in the chain: ``args`` and the ``message`` attribute litellm and openai print.
    """
    hidden = tuple(secrets)
    pending: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        with contextlib.suppress(Exception):  # an exception type may refuse new attributes
            current.args = tuple(
                redact_secrets(arg, hidden) if isinstance(arg, str) else arg for arg in current.args
            )
            message = getattr(current, "message", None)
            if isinstance(message, str):
                current.message = redact_secrets(message, hidden)  # type: ignore[attr-defined]
            body = getattr(current, "body", None)  # the openai SDK's parsed error body
            if isinstance(body, (str, dict)):
                current.body = _redact_body(body, hidden)  # type: ignore[attr-defined]
        pending += [current.__cause__, current.__context__]


def _redact_body(body: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(body, str):
        return redact_secrets(body, secrets)
    if isinstance(body, dict):
        return {key: _redact_body(value, secrets) for key, value in body.items()}
    if isinstance(body, list):
        return [_redact_body(value, secrets) for value in body]
    return body


def to_llm_error(
    exc: BaseException,
    *,
    attempts: int,
    label: str = "llm",
    secrets: Iterable[str] = (),
    endpoint: str | None = None,
) -> LLMError:
    """The ``LLMError`` for a final failure: names the error type and a status really received,
    says whether it was retried, never shows a secret."""
    failure = classify(exc)
    tries = f"{attempts} attempt" + ("" if attempts == 1 else "s")
    verdict = f"gave up after {tries}" if failure.retryable else f"not retryable, {tries}"
    where = ""
    if endpoint and failure.name in ("ConnectionError", "Timeout") and failure.status is None:
        where = f" (api_base {endpoint})"
    message = redact_secrets(f"{label}: {describe(failure)}{where} ({verdict})", secrets)
    return LLMError(message, status_code=failure.status, attempts=attempts)


__all__ = [
    "RETRYABLE_STATUS",
    "RetryPolicy",
    "describe_error",
    "is_retryable",
    "parse_retry_after",
    "redact_secrets",
    "retry_after_seconds",
    "scrub_chain",
    "status_code_of",
    "to_llm_error",
]
