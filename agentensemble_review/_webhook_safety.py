"""What the webhook handler does to stay safe with secrets in its URL and hostile answers.

- ``safe_url``: a URL as shown in messages and logs: no user info, query or fragment, and path
  segments that look like tokens masked.
- ``register_url_secrets`` / ``register_header_secrets``: register every credential the handler
  holds (``agentensemble.redaction.register_secret``) so it is redacted wherever it shows up, an
  echo from the webhook included.
- ``install_http_log_redaction``: httpx logs each request's full URL at INFO; a filter on its
  loggers redacts the registered secrets from those records.
- ``parse_retry_after``: a ``Retry-After`` header read defensively.

The rules themselves are the one outward-redaction policy, ``agentensemble.redaction``.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping

import httpx

from agentensemble import redaction as _policy

MAX_RETRY_AFTER_SECONDS = 60.0
"""A longer ``Retry-After`` is cut to this (and always to the review's deadline)."""


def safe_url(url: httpx.URL | str) -> str:
    """``url`` for messages (the policy's ``safe_url``: no user info, query or fragment, token-like
    path segments masked)."""
    return _policy.safe_url(str(url))


def register_url_secrets(url: httpx.URL) -> None:
    """Register the credentials a webhook URL may carry (the policy's ``register_url_secrets``)."""
    _policy.register_url_secrets(str(url))


def register_header_secrets(headers: Mapping[str, str], secret: str | None) -> None:
    """Register the signing secret and every extra header's credential."""
    _policy.register_secret(secret)
    _policy.register_header_secrets(headers)


def header_ok(name: object, value: object) -> bool:
    """Whether HTTP can carry this header: ASCII, no line break or control character."""
    if not isinstance(name, str) or not isinstance(value, str) or not name:
        return False
    text = name + value
    return text.isascii() and not any((ord(c) < 32 and c != "\t") or c == "\x7f" for c in text)


def install_http_log_redaction() -> None:
    """Redact the policy's secrets from httpx's own log records (it logs each URL at INFO)."""
    from agentensemble._base.log_redaction import install_log_redaction

    install_log_redaction()


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
