"""Making what a run produced always saveable as JSON, whatever a tool or model put in it.

A tool may return any object (kept as ``structured_output``), and text from a model, a tool or
``os.listdir`` may hold lone surrogates (``"\\ud800"``) that UTF-8 cannot encode. Either made
``model_dump_json()`` raise, so a finished run could not be saved. Here unknown objects become
their text and lone surrogates become U+FFFD, in JSON output only: the Python objects stay as
they were.

A model nested in another (a task's output in a run's, a model turn in a trace) is cleaned by
the outermost model being saved, once, with everything else: each level cleaned its part and
the parent all of it again, the 20-turn output's JSON most of its time (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"

# set while a SaveableModel's JSON is being built: the models inside it leave the cleaning to it
_cleaning: ContextVar[bool] = ContextVar("agentensemble_saveable_cleaning", default=False)
_UNKNOWN = object()


def _text(value: Any) -> str:
    outer = _cleaning.set(False)  # a __str__ saving a model of its own gets it cleaned
    try:
        return str(value)
    except Exception:  # a hostile __str__
        return f"<unprintable {type(value).__name__}>"
    finally:
        _cleaning.reset(outer)


def jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data: what pydantic knows as usual, anything else as its str."""
    try:
        return _scrubbed(to_jsonable_python(value, fallback=_text))
    except Exception:  # circular references and the like
        return scrub(_text(value))


def scrub(value: Any) -> Any:
    """JSON-ready data with every lone surrogate in its strings (keys too) replaced."""
    if isinstance(value, str):
        return value if value.isascii() else _LONE_SURROGATE.sub(REPLACEMENT, value)
    if isinstance(value, dict):
        return {scrub(key): scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub(item) for item in value]
    return value


def _scrubbed(data: Any) -> Any:
    """``scrub(data)`` for a model's JSON-ready data, found unneeded first by pydantic's own
    encoder (in Rust, about a fifth of a walk in Python): UTF-8 cannot hold a lone surrogate,
    so the encoding fails if and only if there is one (or the data holds what it refuses)."""
    try:
        to_json(data)
    except Exception:  # a lone surrogate, or something odd: the walk decides, as it always did
        return scrub(data)
    return data


class SaveableModel(BaseModel):
    """A model whose JSON output never fails: unknown objects in ``Any`` fields become their
    text, lone surrogates become U+FFFD. Python-mode dumps are unchanged."""

    # built on first use, like every subclass: building at import cost import time
    model_config = ConfigDict(defer_build=True)

    @model_serializer(mode="wrap", when_used="json")
    def _saveable_json(self, handler: SerializerFunctionWrapHandler) -> Any:
        inside = _cleaning.get()  # inside a model being saved: that model cleans this part
        outer = _cleaning.set(True)
        try:
            data = handler(self)
        except PydanticSerializationError:  # an object pydantic does not know, somewhere
            data = _UNKNOWN
        finally:
            _cleaning.reset(outer)
        if data is _UNKNOWN:
            return jsonable(self.model_dump(mode="python"))  # cleaned by jsonable
        return data if inside else _scrubbed(data)


__all__ = ["REPLACEMENT", "SaveableModel", "jsonable", "scrub"]
