"""Turning event values into trace data: redacted, JSON-safe, plain dicts.

The recorder stores these dicts while a run goes and validates them into an ``ExecutionTrace``
once at the end. Events the recorder has no special place for become ``EventRecord`` data, so
whatever a workflow emits (guardrail checks, a new event type) still lands in the trace.
"""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel

from agentensemble.outputs import TokenUsage
from agentensemble.redaction import redact, redact_text
from agentensemble.tracing.trace import ErrorInfo

Record = dict[str, Any]

#: Fields every event carries, already known from where the record is filed.
_FILED_BY = frozenset({"run_id", "task_index"})


now = time.time
"""When a record was made, as a stamp (seconds since the epoch): a quarter of the instructions of
``datetime.now(timezone.utc)``, seven times a 1-tool run. ``with_datetimes`` makes the stamps
the UTC datetimes the trace holds (the same values ``datetime.now`` gives) when it is built."""

_STAMPS = ("started_at", "ended_at", "requested_at", "checked_at", "at")
_TASK_PARTS = ("model_turns", "tool_calls", "reviews", "delegations", "guardrails", "events")


def with_datetimes(record: Record) -> Record:
    """``record`` (a whole trace's) with every stamp made a UTC datetime, in place."""
    _dated(record)
    for item in record.get("events", ()):
        _dated(item)
    for task in record.get("tasks", ()):
        _dated(task)
        for part in _TASK_PARTS:
            for item in task.get(part, ()):
                _dated(item)
    return record


def _dated(record: Record) -> None:
    for key in _STAMPS:
        stamp = record.get(key)
        if type(stamp) is float:  # once: a review's record may sit in two places
            record[key] = datetime.fromtimestamp(stamp, timezone.utc)


def text(value: Any) -> str | None:
    return None if value is None else redact_text(str(value))


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):  # redacted too: redact() does not look inside models
        return redact(value.model_dump(mode="json"))
    if isinstance(value, BaseException):
        return error_record(value)
    return repr(value)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _is_json(value: Any) -> bool:
    """Whether ``value`` is JSON data already, in the very types a JSON round trip gives back
    (no tuples, subclasses, non-str keys or objects), so that the round trip can be skipped."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        return all(type(k) is str and _is_json(v) for k, v in value.items())
    if kind is list:
        return all(_is_json(v) for v in value)
    return False


def json_safe(value: Any) -> Any:
    """``value`` redacted and reduced to JSON data (models dumped, other objects as repr)."""
    safe = redact(value)  # new dicts and lists: nothing of the caller's is shared
    if _is_json(safe):  # the common case (run inputs, messages): the round trip is a copy
        return safe
    return json.loads(json.dumps(safe, default=_plain))


def error_record(error: BaseException) -> Record:
    return {"type": type(error).__name__, "message": redact_text(str(error))}


def error_info(error: BaseException) -> ErrorInfo:
    return ErrorInfo(**error_record(error))


def counts(usage: TokenUsage) -> Record:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def event_record(event: Any) -> Record:
    """Any event as an ``EventRecord``: its type name, when it arrived, its other fields."""
    fields: Record = {}
    compact = getattr(event, "trace_fields", None)
    if callable(compact):  # an event that says what of it is worth keeping
        fields = json_safe(compact())
    elif dataclasses.is_dataclass(event) and not isinstance(event, type):
        for item in dataclasses.fields(event):
            if item.name not in _FILED_BY:
                value = getattr(event, item.name)
                fields[item.name] = json_safe(
                    _plain(value) if isinstance(value, BaseModel) else value
                )
    return {"type": type(event).__name__, "at": now(), "fields": fields}


__all__ = [
    "Record",
    "counts",
    "error_info",
    "error_record",
    "event_record",
    "json_safe",
    "now",
    "text",
    "with_datetimes",
]
