"""Failures are classified by their real cause, the same whichever library raised them.

The chains below are built from the real exception types of httpx, the openai SDK and litellm,
shaped as measured over a local server (see DEPENDENCIES.md): litellm wraps a refused connection,
an unencodable message and a missing key alike as ``InternalServerError`` with status 500.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import openai
import pytest

from agentensemble.llm._failures import Failure, classify, describe
from agentensemble.llm.retry import is_retryable, to_llm_error

URL = "http://127.0.0.1:9/v1/chat/completions"
REQUEST = httpx.Request("POST", URL)


def raised(exc: BaseException, *causes: BaseException) -> BaseException:
    """``exc`` raised from ``causes[0]``, raised from ``causes[1]``, ..."""
    chain = [exc, *causes]
    for outer, inner in itertools.pairwise(chain):
        outer.__cause__ = inner
    return exc


def litellm_wrapped(inner: BaseException, name: str = "InternalServerError") -> BaseException:
    from agentensemble.llm._litellm import load_litellm

    litellm = load_litellm()
    outer = getattr(litellm, name)(f"litellm.{name}: {inner}", llm_provider="openai", model="m")
    return raised(outer, inner)


def refused() -> BaseException:
    return raised(
        openai.APIConnectionError(request=REQUEST),
        httpx.ConnectError("All connection attempts failed", request=REQUEST),
        ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)"),
    )


def status_error(status: int, body: dict[str, Any] | str) -> BaseException:
    content = json.dumps({"error": body}) if isinstance(body, dict) else body
    response = httpx.Response(status, request=REQUEST, content=content.encode())
    cls = openai.RateLimitError if status == 429 else openai.APIStatusError
    return cls(f"Error code: {status}", response=response, body=body)


def unencodable() -> UnicodeEncodeError:
    return UnicodeEncodeError("utf-8", "x\ud800", 1, 2, "surrogates not allowed")


def dropped() -> BaseException:
    return raised(
        openai.APIConnectionError(request=REQUEST),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
    )


def timed_out() -> BaseException:
    return raised(openai.APITimeoutError(request=REQUEST), httpx.ReadTimeout("", request=REQUEST))


def missing_key() -> BaseException:
    return openai.OpenAIError("Missing credentials. Please pass an `api_key`")


def no_scheme() -> BaseException:
    return raised(
        openai.APIConnectionError(request=REQUEST),
        httpx.UnsupportedProtocol("Request URL is missing an 'http://' or 'https://' protocol."),
    )


def non_json() -> BaseException:
    return json.JSONDecodeError("Expecting value", "<html>", 0)


CASES = [
    # label, the failure, (name, status, retryable), a piece of the detail
    ("refused", refused, ("ConnectionError", None, True), "connection refused by 127.0.0.1:9"),
    ("dropped", dropped, ("ConnectionError", None, True), "broke before a complete response"),
    ("timeout", timed_out, ("Timeout", None, True), "no response from 127.0.0.1:9 in time"),
    ("surrogate", unencodable, ("UnicodeEncodeError", None, False), "no request was sent"),
    ("missing key", missing_key, ("ConfigurationError", None, False), "Missing credentials"),
    ("no scheme", no_scheme, ("ConfigurationError", None, False), "could not be sent"),
    ("non-JSON body", non_json, ("InvalidResponseError", None, True), "not valid JSON"),
    (
        "429",
        lambda: status_error(429, {"message": "slow down", "type": "rate"}),
        ("RateLimitError", 429, True),
        "slow down",
    ),
    (
        "502 with an HTML body",
        lambda: status_error(502, "<html>bad gateway</html>"),
        ("BadGatewayError", 502, True),
        "<html>bad gateway</html>",
    ),
    (
        "context window by code",
        lambda: status_error(400, {"message": "too long", "code": "context_length_exceeded"}),
        ("ContextWindowExceededError", 400, False),
        "too long",
    ),
    (
        "401",
        lambda: status_error(401, {"message": "bad key", "code": "invalid_api_key"}),
        ("AuthenticationError", 401, False),
        "bad key",
    ),
]


@pytest.mark.parametrize(
    ("make", "expected", "detail"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("wrapped", [False, True], ids=["openai-sdk", "litellm"])
def test_classify_reads_the_real_cause_on_both_lanes(
    make: Any, expected: tuple[str, int | None, bool], detail: str, wrapped: bool
) -> None:
    exc = make()
    if wrapped:  # as litellm delivers it: an InternalServerError claiming HTTP 500
        exc = litellm_wrapped(exc)
        assert getattr(exc, "status_code", None) == 500
    failure = classify(exc)
    assert (failure.name, failure.status, failure.retryable) == expected
    assert detail in failure.detail
    assert is_retryable(exc) is expected[2]


def test_a_connection_error_never_claims_an_http_status() -> None:
    error = to_llm_error(
        litellm_wrapped(refused()), attempts=4, label="openai/m", endpoint="http://127.0.0.1:9/v1"
    )
    text = str(error)
    assert "HTTP" not in text and "500" not in text
    assert error.status_code is None
    assert "connection refused by 127.0.0.1:9" in text
    assert "(api_base http://127.0.0.1:9/v1)" in text
    assert "gave up after 4 attempts" in text


def test_a_local_error_says_not_retryable_and_no_status() -> None:
    error = to_llm_error(litellm_wrapped(unencodable()), attempts=1, label="openai/m")
    assert str(error).startswith("openai/m: UnicodeEncodeError: text could not be encoded")
    assert "not retryable, 1 attempt" in str(error)
    assert error.status_code is None


def test_litellm_prefixes_are_stripped_so_both_lanes_read_alike() -> None:
    sdk = status_error(503, {"message": "injected fault 503"})
    assert describe(classify(sdk)) == describe(
        classify(litellm_wrapped(sdk, "ServiceUnavailableError"))
    )
    assert describe(classify(sdk)) == "ServiceUnavailableError (HTTP 503): injected fault 503"
    assert classify(sdk) == Failure("ServiceUnavailableError", 503, "injected fault 503", True)


def test_litellms_own_failures_never_claim_a_status_no_response_had() -> None:
    bug = TypeError("'NoneType' object is not subscriptable")
    wrapped = litellm_wrapped(bug, "APIConnectionError")  # litellm's catch-all, "HTTP 500"
    failure = classify(wrapped)
    assert (failure.name, failure.status, failure.retryable) == ("TypeError", None, False)
    assert failure.detail == f"failed before any response arrived: {bug}"
    assert classify(bug) == failure  # raised as it is on the openai lane: read the same


AIOHTTP_CHAINS = [
    # what httpx-aiohttp (the openai lane's transport) raises, from aiohttp's real error
    (
        "server hung up",
        lambda aiohttp: raised(
            openai.APITimeoutError(request=REQUEST),
            httpx.ConnectTimeout("Server disconnected"),
            aiohttp.ServerDisconnectedError(),
        ),
        Failure(
            "ConnectionError",
            None,
            "the connection to 127.0.0.1:9 broke before a complete response "
            "(Server disconnected without sending a response.)",
            True,
        ),
    ),
    (
        "read timeout",
        lambda aiohttp: raised(
            openai.APITimeoutError(request=REQUEST),
            httpx.ReadTimeout("Timeout on reading data from socket"),
            aiohttp.SocketTimeoutError("Timeout on reading data from socket"),
        ),
        Failure("Timeout", None, "no response from 127.0.0.1:9 in time", True),
    ),
]


@pytest.mark.parametrize(
    ("name", "make", "expected"), AIOHTTP_CHAINS, ids=[chain[0] for chain in AIOHTTP_CHAINS]
)
def test_the_aiohttp_transports_relabelled_errors_read_as_what_happened(
    name: str, make: Any, expected: Failure
) -> None:
    import aiohttp

    assert classify(make(aiohttp)) == expected
