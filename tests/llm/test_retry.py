"""Retry classification, Retry-After parsing, redaction and the policy's loop."""

from __future__ import annotations

import asyncio
import gc
import logging
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from agentensemble.errors import LLMError
from agentensemble.llm.retry import (
    RetryPolicy,
    is_retryable,
    parse_retry_after,
    redact_secrets,
    retry_after_seconds,
    to_llm_error,
)


class ProviderError(Exception):
    """Stands in for a litellm/openai error: a status code and optional headers."""

    def __init__(
        self, message: str = "boom", status_code: int | None = None, headers: Any = None
    ) -> None:
        super().__init__(message)
        if status_code is not None:
            self.status_code = status_code
        self.litellm_response_headers = headers


def named(name: str, status: int | None = None, base: type[Exception] = ProviderError) -> Any:
    """An exception instance whose class is called ``name`` (classification is by name)."""
    cls = type(name, (base,), {})
    return cls("failure", status) if base is ProviderError else cls("failure")


def caused_by_import_error() -> Exception:
    try:
        try:
            raise ModuleNotFoundError("No module named 'mcp'")
        except ImportError as inner:
            raise named("APIConnectionError", 500) from inner
    except Exception as outer:
        return outer


CLASSIFICATION = [
    ("429 rate limit", named("RateLimitError", 429), True),
    ("500", ProviderError(status_code=500), True),
    ("502", named("BadGatewayError", 502), True),
    ("503", named("ServiceUnavailableError", 503), True),
    ("504", ProviderError(status_code=504), True),
    ("408 litellm Timeout", named("Timeout", 408), True),
    ("529 overloaded", ProviderError(status_code=529), True),
    ("400", named("BadRequestError", 400), False),
    ("401 as BadRequestError", named("BadRequestError", 401), False),
    ("401", named("AuthenticationError", 401), False),
    ("403", named("PermissionDeniedError", 403), False),
    ("404", named("NotFoundError", 404), False),
    ("422", ProviderError(status_code=422), False),
    ("501", ProviderError(status_code=501), False),
    ("context window", named("ContextWindowExceededError", 400), False),
    ("context window, odd status", named("ContextWindowExceededError", 500), False),
    ("content policy", named("ContentPolicyViolationError", 400), False),
    ("auth error without status", named("AuthenticationError"), False),
    ("missing module", caused_by_import_error(), False),
    ("missing module in message", ProviderError("No module named 'mcp'", 500), False),
    ("TimeoutError", TimeoutError(), True),
    ("asyncio.TimeoutError", asyncio.TimeoutError(), True),
    ("ConnectionResetError", ConnectionResetError(), True),
    ("httpx.ConnectError", httpx.ConnectError("refused"), True),
    ("httpx.ReadTimeout", httpx.ReadTimeout("slow"), True),
    ("httpx.RemoteProtocolError", httpx.RemoteProtocolError("dropped"), True),
    ("APIConnectionError by name", named("APIConnectionError"), True),
    ("ValueError", ValueError("bug"), False),
    ("KeyError", KeyError("bug"), False),
    ("bool status is no status", ProviderError(status_code=True), False),
]


@pytest.mark.parametrize(
    ("exc", "expected"),
    [pytest.param(exc, want, id=label) for label, exc, want in CLASSIFICATION],
)
def test_is_retryable(exc: BaseException, expected: bool) -> None:
    assert is_retryable(exc) is expected


def test_real_litellm_exceptions_classify_as_documented() -> None:
    from agentensemble.llm._litellm import load_litellm

    litellm = load_litellm()
    common = {"llm_provider": "openai", "model": "m"}
    assert is_retryable(litellm.RateLimitError("x", **common))
    assert is_retryable(litellm.InternalServerError("x", **common))
    assert is_retryable(litellm.ServiceUnavailableError("x", **common))
    assert is_retryable(litellm.BadGatewayError("x", **common))
    assert is_retryable(litellm.Timeout("x", **common))
    assert is_retryable(litellm.APIConnectionError("x", **common))
    assert not is_retryable(litellm.BadRequestError("x", **common))
    assert not is_retryable(litellm.AuthenticationError("x", **common))
    assert not is_retryable(litellm.NotFoundError("x", **common))
    assert not is_retryable(litellm.ContextWindowExceededError("x", **common))


NOW = datetime(2026, 11, 3, 12, 0, 0, tzinfo=timezone.utc)

RETRY_AFTER_VALUES = [
    ("2", 2.0),
    ("0", 0.0),
    (" 1.5 ", 1.5),
    ("-3", 0.0),
    ("120", 120.0),
    ("Tue, 03 Nov 2026 12:00:30 GMT", 30.0),
    ("Tue, 03 Nov 2026 11:59:00 GMT", 0.0),
    ("soon", None),
    ("", None),
    ("inf", None),
    ("nan", None),
]


@pytest.mark.parametrize(("value", "expected"), RETRY_AFTER_VALUES)
def test_parse_retry_after(value: str, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == expected


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"Retry-After": "3"}, 3.0),
        (httpx.Headers({"Retry-After": "4"}), 4.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "junk", "retry-after": "9"}, 9.0),
        ({"retry-after": "Tue, 03 Nov 2026 12:01:00 GMT"}, 60.0),
        ({"x-other": "1"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_seconds_reads_litellm_headers(headers: Any, expected: float | None) -> None:
    assert retry_after_seconds(ProviderError(status_code=429, headers=headers), now=NOW) == expected


def test_retry_after_seconds_reads_response_and_plain_headers() -> None:
    exc = ProviderError(status_code=429)
    exc.response = httpx.Response(429, headers={"Retry-After": "7"})  # type: ignore[attr-defined]
    assert retry_after_seconds(exc) == 7.0
    plain = ProviderError(status_code=429)
    plain.headers = {"retry-after": "5"}  # type: ignore[attr-defined]
    assert retry_after_seconds(plain) == 5.0
    assert retry_after_seconds(ValueError("no headers here")) is None


def test_retry_after_http_date_defaults_to_the_current_time() -> None:
    later = datetime.now(timezone.utc) + timedelta(seconds=100)
    value = later.strftime("%a, %d %b %Y %H:%M:%S GMT")
    seconds = retry_after_seconds(ProviderError(status_code=429, headers={"retry-after": value}))
    assert seconds is not None and 90 < seconds <= 100


def test_backoff_is_exponential_and_capped_without_jitter() -> None:
    policy = RetryPolicy(initial_backoff=1, multiplier=2, max_backoff=5, jitter=0)
    assert [policy.backoff(n) for n in range(1, 6)] == [1, 2, 4, 5, 5]


def test_backoff_jitter_stays_within_its_fraction() -> None:
    policy = RetryPolicy(initial_backoff=1, multiplier=2, max_backoff=100, jitter=0.5)
    waits = [policy.backoff(3) for _ in range(200)]
    assert all(2.0 <= w <= 4.0 for w in waits)
    assert len(set(waits)) > 1


def test_wait_for_prefers_retry_after_and_caps_it() -> None:
    policy = RetryPolicy(initial_backoff=1, jitter=0, max_retry_after=10)
    asked = ProviderError(status_code=429, headers={"retry-after": "3"})
    too_long = ProviderError(status_code=429, headers={"retry-after": "3600"})
    assert policy.wait_for(asked, 1) == 3.0
    assert policy.wait_for(too_long, 1) == 10.0
    assert policy.wait_for(ProviderError(status_code=500), 2) == 2.0


def test_policy_validates_its_fields() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(jitter=2)


@pytest.mark.parametrize(
    ("text", "secret_part"),
    [
        ("Incorrect API key provided: sk-proj-abcDEF123456789", "abcDEF123456789"),
        ("headers={'Authorization': 'Bearer abc.def-ghi'}", "abc.def-ghi"),
        ("authorization: Bearer tok_123456", "tok_123456"),
        ("api_key=hunter2hunter2 in url", "hunter2hunter2"),
        ('{"x-api-key": "anthropic-key-xyz"}', "anthropic-key-xyz"),
        ("key AIzaSyA1234567890abcdefghijk", "AIzaSyA1234567890abcdefghijk"),
    ],
)
def test_redact_secrets_hides_key_shapes(text: str, secret_part: str) -> None:
    redacted = redact_secrets(text)
    assert secret_part not in redacted
    assert "***" in redacted


def test_redact_secrets_hides_given_secret_and_keeps_the_rest() -> None:
    assert redact_secrets("token mysecretvalue leaked", ["mysecretvalue"]) == "token *** leaked"
    assert redact_secrets("plain message, status 429") == "plain message, status 429"


def test_llm_error_names_type_and_status_but_no_secret() -> None:
    exc = named("AuthenticationError", 401)
    exc.args = ("Incorrect API key provided: sk-live-0123456789abcdef",)
    error = to_llm_error(
        exc, attempts=1, label="openai/gpt-4o", secrets=["sk-live-0123456789abcdef"]
    )
    assert isinstance(error, LLMError)
    assert error.status_code == 401 and error.attempts == 1
    text = str(error)
    assert "AuthenticationError" in text and "401" in text and "openai/gpt-4o" in text
    assert "0123456789abcdef" not in text
    assert "not retryable" in text


# --------------------------------------------------------------------------- the loop


FAST = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.002, jitter=0)


class Script:
    """An async callable that raises the given exceptions in turn, then returns "ok"."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


@pytest.mark.anyio
async def test_run_retries_transient_failures_then_returns() -> None:
    script = Script(named("RateLimitError", 429), ProviderError(status_code=503))
    assert await FAST.run(script, label="m") == "ok"
    assert script.calls == 3


@pytest.mark.anyio
async def test_run_fails_fast_on_non_retryable() -> None:
    script = Script(named("BadRequestError", 400), ProviderError(status_code=500))
    with pytest.raises(LLMError) as caught:
        await FAST.run(script, label="m")
    assert script.calls == 1
    assert caught.value.attempts == 1 and caught.value.status_code == 400
    assert isinstance(caught.value.__cause__, ProviderError)


@pytest.mark.anyio
async def test_run_gives_up_after_max_attempts() -> None:
    script = Script(*[ProviderError(status_code=500) for _ in range(5)])
    with pytest.raises(LLMError) as caught:
        await FAST.run(script, label="m")
    assert script.calls == 3
    assert caught.value.attempts == 3 and caught.value.status_code == 500
    assert "gave up after 3 attempts" in str(caught.value)


@pytest.mark.anyio
async def test_run_honours_retry_after() -> None:
    script = Script(ProviderError(status_code=429, headers={"retry-after": "0.2"}))
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await FAST.run(script) == "ok"
    assert loop.time() - start >= 0.19


@pytest.mark.anyio
async def test_run_passes_llm_error_through_unchanged() -> None:
    original = LLMError("already ours", status_code=None, attempts=1)
    with pytest.raises(LLMError) as caught:
        await FAST.run(Script(original))
    assert caught.value is original


@pytest.mark.anyio
async def test_run_logs_each_retry_at_warning_without_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "sk-live-abcdefghijklmnop"
    script = Script(ProviderError(f"bad gateway for key {secret}", status_code=502))
    with caplog.at_level(logging.WARNING, logger="agentensemble"):
        await FAST.run(script, label="openai/m", secrets=[secret])
    retries = [r for r in caplog.records if "llm_retry" in r.getMessage()]
    assert len(retries) == 1
    record = retries[0]
    assert record.levelno == logging.WARNING
    assert getattr(record, "attempt", None) == 1
    assert getattr(record, "status_code", None) == 502
    assert isinstance(getattr(record, "wait", None), float)
    assert secret not in str(record.__dict__)


@pytest.mark.anyio
async def test_a_first_attempt_that_succeeds_leaves_no_garbage_for_the_collector() -> None:
    """Nothing of the retry loop is built on the way every call goes: no object of it waits
    for the garbage collector (which, with a thousand runs in flight, walks them all)."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        assert await FAST.run(Script(), label="m") == "ok"
        gc.collect()
        left = [o for o in gc.garbage if type(o).__module__.startswith("tenacity")]
        left += [o for o in gc.garbage if getattr(o, "__qualname__", "").startswith("RetryPolicy")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []


@pytest.mark.anyio
async def test_a_cancelled_first_attempt_is_not_retried() -> None:
    script = Script(asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        await FAST.run(script, label="m")
    assert script.calls == 1
