"""Run events as JSON for the console: ``event_to_json(event)``.

Any event (a frozen dataclass of ``agentensemble.events``) becomes ``{"type": <class name>,
"ts": <unix seconds>, <its fields>...}``: durations in seconds, errors as ``"Type: message"``,
pydantic models dumped, the final ``EnsembleOutput`` reduced to its summary (the console shows
its tasks from their own events), a memory retrieval's entries with their whole sizes. Strings
are redacted (registered secrets, key-like text) and every size is bounded, so posting an event
can neither leak a key nor carry megabytes.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from pydantic import BaseModel

from agentensemble.redaction import redact_text

MAX_TEXT = 20_000
MAX_ITEMS = 200
MAX_DEPTH = 6
MAX_MESSAGES = 30
"""A model call's prompt keeps its last messages only: a long conversation stays sendable."""


def _text(value: str) -> str:
    value = redact_text(value)
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + " …[truncated]"


def to_json_value(value: Any, depth: int = 0) -> Any:
    """A JSON-ready, redacted, bounded copy of ``value``."""
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Enum):
        return to_json_value(value.value, depth)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, BaseException):
        return _text(f"{type(value).__name__}: {value}")
    if depth >= MAX_DEPTH:
        return _text(repr(value)[:500])
    if isinstance(value, BaseModel):
        try:
            dumped = _seconds(value.model_dump(mode="json", exclude={"trace"}), value)
        except ValueError:  # a plain model pydantic cannot dump as JSON (a lone surrogate in
            dumped = value.model_dump(exclude={"trace"})  # a dict key): walked from Python
        return to_json_value(dumped, depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_json_value(getattr(value, f.name), depth + 1)
            for f in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {
            _text(str(k))[:200]: to_json_value(v, depth + 1)
            for k, v in list(value.items())[:MAX_ITEMS]
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [to_json_value(v, depth + 1) for v in list(value)[:MAX_ITEMS]]
    return _text(repr(value)[:500])


def _seconds(dumped: Any, model: BaseModel) -> Any:
    """``dumped`` (``model``'s JSON dump) with its durations as seconds, as everywhere on the
    wire: pydantic's JSON mode writes a ``timedelta`` as an ISO-8601 text (``"PT0.002S"``),
    which the timeline can neither place nor show. The JSON dump is kept for the rest (the
    model's own serializers clean its text)."""

    def walk(sent: Any, python: Any) -> Any:
        if isinstance(python, timedelta):
            return python.total_seconds()
        if isinstance(sent, dict) and isinstance(python, dict):
            return {k: walk(v, python[k]) if k in python else v for k, v in sent.items()}
        if isinstance(sent, list) and isinstance(python, list | tuple) and len(sent) == len(python):
            return [walk(a, b) for a, b in zip(sent, python, strict=True)]
        return sent

    return walk(dumped, model.model_dump(exclude={"trace"}))


def _ensemble_output(output: Any) -> dict[str, Any]:
    return {
        "raw": to_json_value(getattr(output, "raw", "")),
        "exit_reason": to_json_value(getattr(output, "exit_reason", None)),
        "usage": to_json_value(getattr(output, "usage", None)),
        "cost_usd": getattr(output, "cost_usd", None),
        "total_duration": to_json_value(getattr(output, "total_duration", None)),
        "tasks": len(getattr(output, "task_outputs", []) or []),
    }


def _recalled_items(items: Any) -> list[Any]:
    """A memory retrieval's entries, each with ``chars``: the size of its whole text (the text
    sent may be cut to ``MAX_TEXT``; the page says how much there was)."""
    shown: list[Any] = []
    for item in list(items or [])[:MAX_ITEMS]:
        data = to_json_value(item, 2)
        if isinstance(data, dict):
            text = item.get("text") if isinstance(item, dict) else getattr(item, "text", None)
            data["chars"] = len(text) if isinstance(text, str) else 0
        shown.append(data)
    return shown


def event_to_json(event: Any) -> dict[str, Any]:
    """The console's JSON for one run event (see the module docstring)."""
    data: dict[str, Any] = {"type": type(event).__name__, "ts": time.time()}
    if not dataclasses.is_dataclass(event):
        data["run_id"] = str(getattr(event, "run_id", "") or "")
        return data
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if type(event).__name__ == "EnsembleCompleted" and f.name == "output":
            data["output"] = _ensemble_output(value)
        elif f.name == "messages" and isinstance(value, list | tuple):
            data["messages"] = to_json_value(list(value)[-MAX_MESSAGES:], 1)
        elif type(event).__name__ == "MemoryRetrieved" and f.name == "items":
            data["items"] = _recalled_items(value)
        else:
            data[f.name] = to_json_value(value, 1)
    return data


__all__ = ["event_to_json", "to_json_value"]
