"""What went wrong with a model call, read from the whole exception chain, the same on both lanes.

litellm dresses every failure as an HTTP error: a refused connection, a dropped one, a body that
is not JSON, text that cannot be encoded, a missing API key all arrive as
``InternalServerError`` with ``status_code=500``, although no server ever said 500. The openai
SDK raises its own types (and a bare ``JSONDecodeError`` for a body that is not JSON). So we
classify by the underlying cause: the first exception in the chain that carries a received HTTP
response gives the status; a transport failure with no response gives none; a local,
deterministic failure (encoding, a missing module or credentials, a URL that cannot be sent to)
is never retried. Names and texts are canonical, so a failure reads the same whichever lane
(litellm or the openai SDK) produced it. Duck-typed throughout: neither library is imported.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agentensemble.errors import UntrustedInputError
from agentensemble.untrusted import parse_json

#: Status codes worth another try: timeout, rate limit, server errors, Anthropic's "overloaded".
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})

#: The name shown for a received HTTP status, whichever library raised it.
STATUS_NAMES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    408: "Timeout",
    409: "ConflictError",
    413: "RequestTooLargeError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
    500: "InternalServerError",
    502: "BadGatewayError",
    503: "ServiceUnavailableError",
    504: "GatewayTimeoutError",
    529: "OverloadedError",
}

#: Errors that no retry can fix, whatever status code they carry.
FATAL_NAMES = frozenset(
    {
        "ContextWindowExceededError",
        "ContentPolicyViolationError",
        "UnsupportedParamsError",
        "AuthenticationError",
        "PermissionDeniedError",
        "BudgetExceededError",
    }
)
#: Transient failures recognised by name when no status code is attached.
TRANSIENT_NAMES = frozenset(
    {
        "Timeout",
        "APITimeoutError",
        "APIConnectionError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
        "TimeoutException",  # httpx
        "TransportError",  # httpx
        "NetworkError",  # httpx
        "RemoteProtocolError",  # httpx
        "ServerDisconnectedError",  # aiohttp
        "ClientConnectionError",  # aiohttp
    }
)
#: Transport failures: the request may not have reached the server, no response came back.
_TIMEOUT_NAMES = frozenset({"TimeoutException", "APITimeoutError", "TimeoutError"})
_TRANSPORT_NAMES = _TIMEOUT_NAMES | frozenset(
    {
        "ConnectError",
        "NetworkError",
        "RemoteProtocolError",
        "ReadError",
        "WriteError",
        "APIConnectionError",
        "ConnectionError",  # the builtin OSError family: refused, reset, aborted
        "ServerDisconnectedError",
        "ClientConnectionError",
    }
)
#: A request that could never be sent: a URL without a scheme, a malformed one.
_UNSENDABLE_NAMES = frozenset({"UnsupportedProtocol", "InvalidURL", "LocalProtocolError"})
#: Plain Python errors: a bug or bad input on our side of the wire, the same on every attempt.
_LOCAL_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError, NotImplementedError)
_CONTEXT_WINDOW = re.compile(
    r"context[_ ]length|maximum context|context window|prompt is too long|input is too long", re.I
)
_CONTENT_POLICY = re.compile(r"content[_ ]policy|content[_ ]filter|content_management", re.I)
_LITELLM_PREFIX = re.compile(
    r"^(?:litellm\.\w+:\s*)?(?:\w+(?: Error)?:\s*)?(?:\w+Exception\s*-\s*)?"
)
_ADDRESS = re.compile(r"\('([^']+)', (\d+)\)")


@dataclass(frozen=True)
class Failure:
    """One failed call, classified: canonical name, the status really received, what to say."""

    name: str
    status: int | None
    detail: str
    retryable: bool


class ErrorInAnswer(Exception):
    """A 200 answer holding an ``error`` object instead of choices: OpenRouter and other
    gateways report an upstream failure so (its ``code`` the upstream's HTTP status), in a
    whole answer or as a chunk of a stream. Read like the litellm lane reads it: named by that
    status, retried (and fallen back from) when the status is an outage's."""

    def __init__(self, error: Any) -> None:
        self.body = error  # named as the SDK's errors name theirs: ``scrub_chain`` redacts it
        super().__init__(_in_answer(error).detail)


def _in_answer(error: Any) -> Failure:
    code = error.get("code") if isinstance(error, dict) else None
    status = _int(code)
    if status is None and isinstance(code, str) and code.isdigit() and len(code) == 3:
        status = int(code)
    message = error.get("message") if isinstance(error, dict) else error
    detail = message if isinstance(message, str) else json.dumps(error, default=str)
    name = STATUS_NAMES.get(status, "APIError") if status is not None else "APIError"
    return Failure(name, None, detail, status in RETRYABLE_STATUS)


def _error_in_answer(exc: BaseException) -> Failure | None:
    """The failure an answer's own ``error`` object reports (ours, or the openai SDK's
    ``APIError`` for an error chunk in a stream, which no HTTP status came with)."""
    if isinstance(exc, ErrorInAnswer):
        return _in_answer(exc.body)
    if type(exc).__name__ == "APIError" and type(exc).__module__.startswith("openai"):
        body = getattr(exc, "body", None)
        if isinstance(body, dict):
            return _in_answer(body)
    return None


def chain_of(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it was raised from or while handling, once each."""
    seen: set[int] = set()
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def status_code_of(exc: BaseException) -> int | None:
    """The HTTP status an error carries, if any (duck-typed: ``status_code`` or ``response``)."""
    status = _int(getattr(exc, "status_code", None))
    if status is not None:
        return status
    return _int(getattr(getattr(exc, "response", None), "status_code", None))


def _received_status(chain: list[BaseException]) -> int | None:
    """The status of a response that really arrived: from the openai SDK's or httpx's error."""
    for exc in chain:
        module = type(exc).__module__
        names = _names(exc)
        if (module.startswith("openai") and "APIStatusError" in names) or (
            module.startswith("httpx") and "HTTPStatusError" in names
        ):
            return _int(getattr(getattr(exc, "response", None), "status_code", None))
    return None


def _is_local_config(exc: BaseException) -> bool:
    """The openai SDK's base error, raised before any request (e.g. missing credentials)."""
    return type(exc).__name__ == "OpenAIError" and type(exc).__module__.startswith("openai")


def _request_url(chain: list[BaseException]) -> Any:
    """The URL really requested: httpx's own errors first (litellm attaches a made-up one)."""
    ranked = sorted(chain, key=lambda e: not type(e).__module__.startswith(("httpx", "openai")))
    for exc in ranked:
        if type(exc).__module__.startswith("litellm"):
            continue
        try:
            request = getattr(exc, "request", None)  # httpx raises if it has none
        except Exception:
            continue
        url = getattr(request, "url", None)
        if url is not None and getattr(url, "host", None):
            return url
    return None


def _address(chain: list[BaseException]) -> str | None:
    """``host:port`` the failed request went to, from its URL or the socket error's text."""
    url = _request_url(chain)
    if url is not None:
        port = url.port or (443 if url.scheme == "https" else 80)
        return f"{url.host}:{port}"
    for exc in chain:
        match = _ADDRESS.search(str(exc))
        if match:
            return f"{match.group(1)}:{match.group(2)}"
    return None


def _wrapper(exc: BaseException) -> bool:
    """litellm's and the openai SDK's own exception types, which wrap the real cause."""
    return type(exc).__module__.startswith(("litellm", "openai"))


def _relabelled_timeout(exc: BaseException) -> bool:
    """A timeout raised for a failure that was none: httpx-aiohttp (the openai package's aiohttp
    transport) maps every aiohttp connection error, a server hanging up included, to httpx's
    ``ConnectTimeout``, raised from the real one."""
    cause = exc.__cause__
    return cause is not None and bool(
        _names(cause) & _TRANSPORT_NAMES and not _names(cause) & _TIMEOUT_NAMES
    )


#: aiohttp's words for a server that hung up before answering, in httpx's (one text on both).
_DISCONNECTED = "Server disconnected without sending a response."


def _transport_failure(chain: list[BaseException]) -> Failure | None:
    # the real cause only: litellm also says APIConnectionError for its own unmapped failures
    transport = [e for e in chain if _names(e) & _TRANSPORT_NAMES and not _wrapper(e)]
    if not transport:
        return None
    address = _address(chain)
    to = f" {address}" if address else ""
    timeouts = [e for e in transport if _names(e) & _TIMEOUT_NAMES and not _relabelled_timeout(e)]
    if timeouts:
        # our own bounds' words (a stream's deadline); a transport's own say only "timed out"
        said = next((str(e) for e in timeouts if type(e) is TimeoutError and str(e)), "")
        where = f" from{to}" if to else ""
        return Failure(
            "Timeout", None, f"no response{where} in time" + (f": {said}" if said else ""), True
        )
    names = set().union(*(_names(e) for e in chain))
    if "ConnectionRefusedError" in names:
        detail = f"connection refused by{to}" if to else "connection refused"
    elif "gaierror" in names:
        detail = f"could not resolve the host{to}"
    elif "ConnectError" in names:
        detail = f"could not connect to{to}" if to else "could not connect"
    else:
        cause = next((str(e) for e in reversed(chain) if str(e)), "")
        if "ServerDisconnectedError" in names:
            cause = _DISCONNECTED
        where = f"the connection to{to}" if to else "the connection"
        detail = f"{where} broke before a complete response" + (f" ({cause})" if cause else "")
    return Failure("ConnectionError", None, detail, True)


_NO_BODY = object()


def _error_body(chain: list[BaseException]) -> Any:
    """The error body as the openai SDK parses it (its ``error`` member, or the whole JSON, or
    the text): taken from the SDK's exception, or parsed from httpx's response the same way."""
    for exc in chain:
        if type(exc).__module__.startswith("openai") and "APIStatusError" in _names(exc):
            return getattr(exc, "body", None)
    for exc in chain:
        if type(exc).__module__.startswith("httpx") and "HTTPStatusError" in _names(exc):
            try:
                text = str(exc.response.text).strip()  # type: ignore[attr-defined]
            except Exception:
                continue
            try:
                data = parse_json(text, what="the error body")
            except ValueError:
                return text
            return data.get("error", data) if isinstance(data, dict) else data
    return _NO_BODY


def _with_upstream(body: dict[str, Any], message: str) -> str:
    """``message`` plus the upstream reason a gateway's error carries in its ``metadata``
    (OpenRouter: ``{"provider_name": "Google", "raw": "...rate-limited upstream..."}``)."""
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        return message
    raw, provider = metadata.get("raw"), metadata.get("provider_name")
    if isinstance(raw, dict | list):
        raw = json.dumps(raw, default=str)
    if not isinstance(raw, str) or not raw.strip():
        return message
    where = f"upstream {provider}" if isinstance(provider, str) and provider else "upstream"
    return f"{message} ({where}: {raw.strip()})"


def _provider_message(chain: list[BaseException]) -> str:
    """The provider's own error message, without the wrappers' prefixes; a gateway's upstream
    reason added when its error carries one."""
    body = _error_body(chain)
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str):
            return _with_upstream(body, message)
        return json.dumps(body, default=str)
    if isinstance(body, str):
        return body.strip()
    if body is None:
        return ""
    if body is not _NO_BODY:
        return json.dumps(body, default=str)
    text = str(chain[0])
    stripped = _LITELLM_PREFIX.sub("", text, count=1) if text.startswith("litellm.") else text
    try:
        parsed = parse_json(stripped, what="the error body")
    except ValueError:
        return stripped
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str) and isinstance(error, dict):
        return _with_upstream(error, message)
    return stripped


def malformed_tool_call(exc: BaseException) -> str | None:
    """The provider's words when it rejected the model's own tool call as malformed (Groq's
    400 ``tool_use_failed``, with the model's text as ``failed_generation``); None otherwise."""
    chain = chain_of(exc)
    body = _error_body(chain)
    if not isinstance(body, dict) or body.get("code") != "tool_use_failed":
        text = " ".join(str(e) for e in chain)
        if "tool_use_failed" not in text:
            return None
        return text
    message = body.get("message")
    generated = body.get("failed_generation")
    said = message if isinstance(message, str) else "the tool call was malformed"
    if isinstance(generated, str) and generated:
        return f"{said}\nThe call you wrote: {generated}"
    return said


def _error_code(chain: list[BaseException]) -> str:
    body = _error_body(chain)
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        return str(body["code"])
    for exc in chain:
        code = getattr(exc, "code", None)
        if isinstance(code, str):
            return code
    return ""


def _http_name(chain: list[BaseException], status: int, message: str) -> str:
    fatal = [n for e in chain for n in _names(e) & FATAL_NAMES if n != "AuthenticationError"]
    if fatal:
        return fatal[0]
    clue = f"{_error_code(chain)} {message}"
    if status in (400, 413) and _CONTEXT_WINDOW.search(clue):
        return "ContextWindowExceededError"
    if status == 400 and _CONTENT_POLICY.search(clue):
        return "ContentPolicyViolationError"
    return STATUS_NAMES.get(status, "APIStatusError")


def classify(exc: BaseException) -> Failure:
    """Name, received status, detail and retryability of a failed model call."""
    chain = chain_of(exc)
    for item in chain:
        if isinstance(item, ImportError) or "No module named" in str(item):
            return Failure(type(item).__name__, None, str(item), False)
        if isinstance(item, UnicodeError):
            detail = f"text could not be encoded, no request was sent: {item}"
            return Failure(type(item).__name__, None, detail, False)
        if _is_local_config(item):
            return Failure("ConfigurationError", None, str(item), False)
        if _names(item) & _UNSENDABLE_NAMES:
            detail = f"the request could not be sent: {item}"
            return Failure("ConfigurationError", None, detail, False)
        in_answer = _error_in_answer(item)
        if in_answer is not None:
            return in_answer
    status = _received_status(chain)
    if status is None:
        transport = _transport_failure(chain)
        if transport is not None:
            return transport
        refused = next((e for e in chain if isinstance(e, UntrustedInputError)), None)
        if refused is not None and not refused.reason.startswith("not valid JSON"):
            # too large (a bounded body, a bounded stream), too deep: say which
            return Failure("InvalidResponseError", None, str(refused), True)
        if refused is not None or any(isinstance(e, json.JSONDecodeError) for e in chain):
            detail = "the server's answer was not valid JSON"  # as litellm's lane says it
            return Failure("InvalidResponseError", None, detail, True)
        local = next((e for e in reversed(chain) if isinstance(e, _LOCAL_ERRORS)), None)
        if local is not None and (local is exc or _wrapper(exc)):
            detail = f"failed before any response arrived: {local}"
            return Failure(type(local).__name__, None, detail, False)
        # litellm's own errors claim a status even when no response arrived (checked above)
        status = None if _wrapper(exc) else status_code_of(exc)
    names = set().union(*(_names(e) for e in chain))
    if status is None:
        retryable = not (names & FATAL_NAMES) and bool(_names(exc) & TRANSIENT_NAMES)
        return Failure(type(exc).__name__, None, _provider_message(chain), retryable)
    message = _provider_message(chain)
    name = _http_name(chain, status, message)
    fatal = bool(names & FATAL_NAMES) or name in FATAL_NAMES
    return Failure(name, status, message, status in RETRYABLE_STATUS and not fatal)


def describe(failure: Failure, *, limit: int = 500) -> str:
    """``Name (HTTP 429): message``, whitespace folded and the length bounded (not redacted)."""
    kind = failure.name + (f" (HTTP {failure.status})" if failure.status is not None else "")
    detail = " ".join(failure.detail.split())
    if len(detail) > limit:
        detail = detail[: limit - 3] + "..."
    return f"{kind}: {detail}" if detail else kind


__all__ = [
    "FATAL_NAMES",
    "RETRYABLE_STATUS",
    "STATUS_NAMES",
    "TRANSIENT_NAMES",
    "ErrorInAnswer",
    "Failure",
    "chain_of",
    "classify",
    "describe",
    "malformed_tool_call",
    "status_code_of",
]
