"""The redaction policy on the stdlib loggers of the libraries we drive: httpx logs each request
URL at INFO, mcp's client logs server messages. A filter on a logger sees only that logger's own
records, so each one is named."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from agentensemble.redaction import redact_text


class RedactingFilter(logging.Filter):
    """Rewrites a record's message (and its exception text) with the policy applied."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


THIRD_PARTY_LOGGERS = (
    "httpx",
    "httpx2",
    "httpcore",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore2",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "client",  # mcp's ClientSession
    "mcp.client.stdio",
    "mcp.client.sse",
    "mcp.client.streamable_http",
)
"""Loggers that print request URLs or server messages (httpx logs each URL at INFO). A filter
on a logger sees only that logger's own records, so each one is named."""

_FILTER = RedactingFilter()


def install_log_redaction(names: Iterable[str] = THIRD_PARTY_LOGGERS) -> None:
    """Add the redacting filter to the named stdlib loggers (idempotent)."""
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


__all__ = ["THIRD_PARTY_LOGGERS", "RedactingFilter", "install_log_redaction"]
