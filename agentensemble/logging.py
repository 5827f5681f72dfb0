"""Structured logging under the ``agentensemble`` logger name, with secrets always redacted.

Importing the library configures nothing and prints nothing: records go to the stdlib logger
``agentensemble`` (which holds a NullHandler), so the application's own logging setup decides
what is shown. ``configure_logging()`` is the opt-in for a quick console or JSON setup.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections.abc import Mapping, MutableMapping
from typing import Any

import structlog

LOGGER_NAME = "agentensemble"
REDACTED = "***"

_SECRET_KEY = re.compile(r"(api[_-]?key|secret|authorization|password|token|signature)", re.I)
_SECRET_VALUE = re.compile(
    r"(sk-[A-Za-z0-9_\-]{6,}|(?i:bearer)\s+[A-Za-z0-9._\-~+/=]{6,}|"
    r"(?i:api[_-]?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9._\-]{6,})"
)
_TOKEN_COUNT_KEYS = {"prompt_tokens", "completion_tokens", "total_tokens", "max_tokens"}
_MIN_SECRET_LENGTH = 6
_known_secrets: set[str] = set()
_known_lock = threading.Lock()

logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())


def register_secret(value: str | None) -> None:
    """Remember a secret by value, so it is redacted wherever it shows up, whatever its shape.

    Keys read from the environment, webhook secrets and tokens are registered where they are
    first used; a provider or webhook echoing one back then cannot leak it. Values shorter than
    six characters are ignored: redacting them would mangle ordinary text.
    """
    if value and len(value) >= _MIN_SECRET_LENGTH:
        with _known_lock:
            _known_secrets.add(value)


def redact_text(text: str) -> str:
    """Replace registered secrets and anything that looks like an API key or bearer token."""
    if _known_secrets:
        with _known_lock:
            known = sorted(_known_secrets, key=len, reverse=True)
        for secret in known:
            if secret in text:
                text = text.replace(secret, REDACTED)
    return _SECRET_VALUE.sub(REDACTED, text)


def redact(value: Any, key: str | None = None) -> Any:
    """Redact secrets in a value: by key name (api_key, secret, authorization...) or by shape."""
    if key is not None and key not in _TOKEN_COUNT_KEYS and _SECRET_KEY.search(key):
        return REDACTED if value not in (None, "") else value
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value


def _redact_processor(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key in list(event_dict):
        event_dict[key] = redact(event_dict[key], key if key != "event" else None)
    return event_dict


def get_logger(**initial: Any) -> Any:
    """The framework's logger: structlog on top of the stdlib ``agentensemble`` logger."""
    return structlog.wrap_logger(
        logging.getLogger(LOGGER_NAME),
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.contextvars.merge_contextvars,  # run_id=... during a run
            _redact_processor,
            structlog.stdlib.render_to_log_kwargs,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
        **initial,
    )


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
                event[key] = redact(value, key)
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
    "configure_logging",
    "get_logger",
    "redact",
    "redact_text",
    "register_secret",
]
