"""Structured logging under the ``agentensemble`` logger name, with secrets always redacted.

Every field and message passes the one redaction policy (``agentensemble.redaction``); its
``register_secret`` / ``redact_text`` / ``redact`` are re-exported here, where they always were.

Importing the library configures nothing and prints nothing: records go to the stdlib logger
``agentensemble`` (which holds a NullHandler), so the application's own logging setup decides
what is shown. ``configure_logging()`` is the opt-in for a quick console or JSON setup.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from agentensemble.redaction import REDACTED, redact, redact_text, register_secret

LOGGER_NAME = "agentensemble"

logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())


def _redact_processor(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key in list(event_dict):
        event_dict[key] = _log_value(event_dict[key], key if key != "event" else None)
    return event_dict


# shown as they are: plain data (already redacted) and exceptions (the renderers format them)
_KEPT = (str, int, float, bool, type(None), dict, list, tuple, BaseException)
_LEFT_AS_THEY_ARE = frozenset({"exc_info", "stack_info"})  # the renderers format these


def _log_value(value: Any, key: str | None) -> Any:
    """A log field redacted (``redact``); any other object whose text (what the renderer
    shows: its repr) holds a secret is replaced by that text, redacted."""
    value = redact(value, key)
    if isinstance(value, _KEPT) or key in _LEFT_AS_THEY_ARE:
        return value
    try:
        shown = repr(value)
    except Exception:
        return value
    cleaned = redact_text(shown)
    return value if cleaned == shown else cleaned


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO}  # what a run logs on every task


class _BoundLogger(structlog.stdlib.BoundLogger):
    """Drops a record below the stdlib logger's level before the record is built: the test
    of ``structlog.stdlib.filter_by_level`` (still the first processor), made first. A run
    logs each task and tool call at INFO, which nobody shows by default."""

    def _proxy_to_logger(
        self, method_name: str, event: str | None = None, *event_args: str, **event_kw: Any
    ) -> Any:
        logger = self._logger
        level = _LEVELS.get(method_name)
        if level is not None and (logger.disabled or level < logger.getEffectiveLevel()):
            return None
        return super()._proxy_to_logger(method_name, event, *event_args, **event_kw)


class _Logger:
    """structlog's lazy proxy (``structlog.wrap_logger``), with ``info``/``debug``/
    ``isEnabledFor`` asking the stdlib logger first. The proxy resolves every method through
    its ``__getattr__`` (a bind, a lookup, then the level test above: ~4 us), which an INFO line
    nobody shows paid twice per task; below the level these return at once, and at or above it
    they take the proxy's usual path. Everything else (``bind``, ``warning``...) is the proxy's."""

    __slots__ = ("_proxy", "_stdlib")

    def __init__(self, proxy: Any, stdlib: logging.Logger) -> None:
        self._proxy = proxy
        self._stdlib = stdlib

    def info(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if not self._stdlib.isEnabledFor(logging.INFO):  # disabled, logging.disable() included
            return None
        return self._proxy.info(event, *args, **kw)

    def debug(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if not self._stdlib.isEnabledFor(logging.DEBUG):
            return None
        return self._proxy.debug(event, *args, **kw)

    def isEnabledFor(self, level: int) -> bool:  # the stdlib's name
        return self._stdlib.isEnabledFor(level)

    def __getattr__(self, name: str) -> Any:
        if name in _Logger.__slots__:  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self._proxy, name)


def get_logger(**initial: Any) -> Any:
    """The framework's logger: structlog on top of the stdlib ``agentensemble`` logger."""
    stdlib = logging.getLogger(LOGGER_NAME)
    proxy = structlog.wrap_logger(
        stdlib,
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.contextvars.merge_contextvars,  # run_id=... during a run
            _redact_processor,
            structlog.stdlib.render_to_log_kwargs,
        ],
        wrapper_class=_BoundLogger,
        cache_logger_on_first_use=True,
        **initial,
    )
    return _Logger(proxy, stdlib)


class _Formatter(logging.Formatter):
    """Renders the ``extra`` fields of our records as key=value pairs or one JSON object."""

    _STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}

    def __init__(self, json_output: bool) -> None:
        super().__init__()
        self._renderer: Any = (
            structlog.processors.JSONRenderer()
            if json_output
            else structlog.dev.ConsoleRenderer(colors=False, pad_event_to=0)
        )

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "timestamp": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": redact_text(record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key not in self._STANDARD and not key.startswith("_"):
                event[key] = _log_value(value, key)
        if record.exc_info:
            event["exception"] = redact_text(self.formatException(record.exc_info))
        return str(self._renderer(None, record.levelname.lower(), event))


def configure_logging(level: str | int = "INFO", json: bool = False) -> None:
    """Opt in to log output on stderr for the ``agentensemble`` logger (console or JSON lines)."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        if getattr(handler, "_agentensemble", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter(json_output=json))
    handler._agentensemble = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level.upper() if isinstance(level, str) else level)
    logger.propagate = False


__all__ = [
    "LOGGER_NAME",
    "REDACTED",
    "configure_logging",
    "get_logger",
    "redact",
    "redact_text",
    "register_secret",
]
