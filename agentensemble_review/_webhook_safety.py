"""What the webhook handler does to stay safe with secrets in its URL and hostile answers.

- ``safe_url``: a URL as shown in messages and logs: no user info, query or fragment, and path
  segments that look like tokens masked.
- ``register_url_secrets`` / ``register_header_secrets``: register every credential the handler
  holds (``agentensemble.logging.register_secret``) so it is redacted wherever it shows up, an
  echo from the webhook included.
- ``install_http_log_redaction``: httpx logs each request's full URL at INFO; a filter on its
  loggers redacts the registered secrets from those records.
- ``parse_retry_after``: a ``Retry-After`` header read defensively.
"""

from __future__ import annotations

import email.utils
import logging
import math
import re
import threading
import time
import urllib.parse
from collections.abc import Mapping

import httpx

from agentensemble.logging import redact_text, register_secret

MAX_RETRY_AFTER_SECONDS = 60.0
"""A longer ``Retry-After`` is cut to this (and always to the review's deadline)."""

_TOKEN_LIKE = re.compile(r"^(?=.*[0-9])(?=.*[A-Za-z])[A-Za-z0-9._~%+=-]{8,}$")
_MASK = "***"


def _looks_like_token(segment: str) -> bool:
    return len(segment) >= 24 or bool(_TOKEN_LIKE.match(segment))


def safe_url(url: httpx.URL | str) -> str:
    """``url`` for messages: no user info, query or fragment (they may carry tokens), and
    every path segment that looks like a token (long, or letters mixed with digits) masked."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return "<invalid URL>"
    port = f":{parsed.port}" if parsed.port else ""
    segments = [_MASK if _looks_like_token(s) else s for s in parsed.path.split("/")]
    return f"{parsed.scheme}://{parsed.host}{port}{'/'.join(segments)}"


def register_url_secrets(url: httpx.URL) -> None:
    """Register the credentials a webhook URL may carry: user info, query values, token-like
    path segments (raw and percent-decoded)."""
    values = [url.username, url.password]
    query = url.query.decode("ascii", "replace")
    values += [v for _, v in urllib.parse.parse_qsl(query, keep_blank_values=False)]
    values += [query]
    raw_path = url.raw_path.decode("ascii", "replace").split("?", 1)[0]
    for segment in raw_path.split("/"):
        if _looks_like_token(segment):
            values += [segment, urllib.parse.unquote(segment)]
    for value in values:
        register_secret(value)


_PLAIN_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "content-type", "user-agent"}
)
"""Headers that never carry a credential: registering ``application/json`` as a secret would
only mangle every message that mentions it."""


def register_header_secrets(headers: Mapping[str, str], secret: str | None) -> None:
    """Register the signing secret and every extra header value (but those of ``_PLAIN_HEADERS``),
    and the credential part of ``Scheme credential`` values (``Bearer <token>``), so an echo of
    any of them is redacted."""
    register_secret(secret)
    for name, value in headers.items():
        if name.lower() in _PLAIN_HEADERS:
            continue
        register_secret(value)
        _, _, credential = value.strip().partition(" ")
        register_secret(credential.strip())


def header_ok(name: object, value: object) -> bool:
    """Whether HTTP can carry this header: ASCII, no line break or control character."""
    if not isinstance(name, str) or not isinstance(value, str) or not name:
        return False
    text = name + value
    return text.isascii() and not any((ord(c) < 32 and c != "\t") or c == "\x7f" for c in text)


class _RedactingFilter(logging.Filter):
    """Rewrites a record's message with the registered secrets redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTER = _RedactingFilter()
_installed = False
_install_lock = threading.Lock()


def install_http_log_redaction() -> None:
    """Add the redacting filter to the ``httpx`` and ``httpcore`` loggers (once)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        for name in ("httpx", "httpcore"):
            logging.getLogger(name).addFilter(_FILTER)
        _installed = True


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay seconds or an HTTP date), or None
    when absent or unusable (malformed, negative, not finite). Capped at
    ``MAX_RETRY_AFTER_SECONDS``."""
    if value is None or len(value) > 100:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, MAX_RETRY_AFTER_SECONDS)


__all__ = [
    "MAX_RETRY_AFTER_SECONDS",
    "header_ok",
    "install_http_log_redaction",
    "parse_retry_after",
    "register_header_secrets",
    "register_url_secrets",
    "safe_url",
]
