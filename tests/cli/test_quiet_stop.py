"""Which log records of a stopping server are dropped: only the libraries' reports of requests
ended by the stop, and only while stopping (the processes themselves are in
tests/serve/test_stop_with_calls_in_flight.py)."""

from __future__ import annotations

import asyncio
import builtins
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from agentensemble.cli._quiet_stop import QuietStop, quiet_stop

GROUP: Any = getattr(builtins, "BaseExceptionGroup", None)
if GROUP is None:  # pragma: no cover - Python 3.10: the backport anyio brings
    from exceptiongroup import BaseExceptionGroup as GROUP

CANCELLED = asyncio.CancelledError("Task cancelled, timeout graceful shutdown exceeded")
ASGI = "Exception in ASGI application\n"
CUT = "ASGI callable returned without completing response."
DISPATCHER = "Dispatcher task is not running. Cannot wait for event dispatch."
UVICORN, A2A = "uvicorn.error", "a2a.server.events.event_queue_v2"

ROWS = [
    # (logger, stopping, message, exception, printed)
    (UVICORN, True, ASGI, CANCELLED, False),
    (UVICORN, True, ASGI, GROUP("g", [CANCELLED, asyncio.CancelledError()]), False),
    (UVICORN, True, ASGI, RuntimeError("a real bug"), True),
    (UVICORN, True, ASGI, GROUP("g", [CANCELLED, ValueError("bug")]), True),
    (UVICORN, False, ASGI, CANCELLED, True),  # not stopping: whatever it is, it shows
    (UVICORN, True, CUT, None, False),
    (UVICORN, False, CUT, None, True),
    (A2A, True, DISPATCHER, None, False),
    (A2A, False, DISPATCHER, None, True),
    (UVICORN, True, "Something else went wrong", None, True),
    (A2A, True, CUT, None, True),  # each logger drops only its own expected records
]


@pytest.mark.parametrize(("logger", "stopping", "message", "error", "printed"), ROWS)
def test_only_what_the_stop_itself_causes_is_dropped(
    logger: str, stopping: bool, message: str, error: BaseException | None, printed: bool
) -> None:
    record = logging.LogRecord(logger, logging.ERROR, __file__, 1, message, None, None)
    if error is not None:
        record.exc_info = (type(error), error, None)
    quiet = QuietStop(SimpleNamespace(should_exit=stopping), logger)
    assert quiet.filter(record) is printed


def test_uvicorn_s_cancelling_line_becomes_one_plain_warning() -> None:
    record = logging.LogRecord(
        UVICORN, logging.ERROR, __file__, 1, "Cancel %s running task(s), timeout ...", (2,), None
    )
    assert QuietStop(SimpleNamespace(should_exit=True), UVICORN).filter(record)
    assert record.getMessage() == "stopping: 2 request(s) still running were cancelled"
    assert record.levelname == "WARNING"


def test_the_filters_are_taken_off_when_the_server_has_run() -> None:
    loggers = [logging.getLogger(UVICORN), logging.getLogger(A2A)]
    before = [list(logger.filters) for logger in loggers]
    with quiet_stop(SimpleNamespace(should_exit=False)):
        during = [len(logger.filters) for logger in loggers]
    assert during == [len(filters) + 1 for filters in before]
    assert [list(logger.filters) for logger in loggers] == before
