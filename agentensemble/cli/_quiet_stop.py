"""Stopping a server with requests in flight says so in one line, without a traceback.

When ``serve-mcp --http`` or ``serve-a2a`` is stopped (Ctrl-C, SIGTERM) while a call is still
running (a tool call waiting on its model, an open stream), uvicorn waits its graceful-shutdown
time, then cancels the request's task and logs the ``CancelledError`` as "Exception in ASGI
application" with a traceback through starlette, mcp and anyio, after an ``ERROR:`` line; a cut
A2A stream adds "ASGI callable returned without completing response" and a2a's "Dispatcher task
is not running". All are the expected end of a stop the user asked for. These filters drop them,
only once the server is stopping, and turn uvicorn's "Cancel N running task(s)" error into a
plain warning; every other record still prints as its library logs it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

UVICORN_ERRORS = "uvicorn.error"
_CANCELLING = "Cancel %s running task(s)"
#: What the servers' libraries log about a request they end because the server is stopping:
#: (logger, message start). Dropped only while stopping; a cancellation report only when the
#: exception it carries is the cancellation itself.
EXPECTED_WHEN_STOPPING = (
    (UVICORN_ERRORS, "Exception in ASGI application"),  # the CancelledError, with a traceback
    (UVICORN_ERRORS, "ASGI callable returned without completing response"),  # a cut stream
    ("a2a.server.events.event_queue_v2", "Dispatcher task is not running"),  # its queue closed
)


def only_cancelled(error: BaseException | None) -> bool:
    """A ``CancelledError``, or a group of them (anyio task groups wrap what they cancel)."""
    if isinstance(error, asyncio.CancelledError):
        return True
    inner = getattr(error, "exceptions", None)  # an exception group (also the 3.10 backport)
    if isinstance(error, BaseException) and isinstance(inner, tuple) and inner:
        return all(only_cancelled(each) for each in inner)
    return False


class QuietStop(logging.Filter):
    """The libraries' reports of the requests they end while ``server`` is stopping."""

    def __init__(self, server: Any, logger: str) -> None:
        super().__init__()
        self._server = server
        self._expected = tuple(start for name, start in EXPECTED_WHEN_STOPPING if name == logger)

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(self._server, "should_exit", False):
            return True
        message = str(record.msg)
        if message.startswith(_CANCELLING):
            record.msg = "stopping: %s request(s) still running were cancelled"
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            return True
        if not message.startswith(self._expected):
            return True
        error = record.exc_info[1] if record.exc_info else None
        return error is not None and not only_cancelled(error)


@contextmanager
def quiet_stop(server: Any) -> Iterator[None]:
    """``QuietStop`` on each logger of ``EXPECTED_WHEN_STOPPING`` while ``server`` runs."""
    filters = [
        (logging.getLogger(name), QuietStop(server, name))
        for name in dict.fromkeys(name for name, _ in EXPECTED_WHEN_STOPPING)
    ]
    for logger, quiet in filters:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger, quiet in filters:
            logger.removeFilter(quiet)


__all__ = ["QuietStop", "only_cancelled", "quiet_stop"]
