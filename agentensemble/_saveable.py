"""Making what a run produced always saveable as JSON, whatever a tool or model put in it.

A tool may return any object (kept as ``structured_output``), and text from a model, a tool or
``os.listdir`` may hold lone surrogates (``"\\ud800"``) that UTF-8 cannot encode. Either made
``model_dump_json()`` raise, so a finished run could not be saved. Here unknown objects become
their text and lone surrogates become U+FFFD, in JSON output only: the Python objects stay as
they were.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer
from pydantic_core import PydanticSerializationError, to_jsonable_python

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def _text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a hostile __str__
        return f"<unprintable {type(value).__name__}>"


def jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data: what pydantic knows as usual, anything else as its str."""
    try:
        return scrub(to_jsonable_python(value, fallback=_text))
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


class SaveableModel(BaseModel):
    """A model whose JSON output never fails: unknown objects in ``Any`` fields become their
    text, lone surrogates become U+FFFD. Python-mode dumps are unchanged."""

    # built on first use, like every subclass: building at import cost import time
    model_config = ConfigDict(defer_build=True)

    @model_serializer(mode="wrap", when_used="json")
    def _saveable_json(self, handler: SerializerFunctionWrapHandler) -> Any:
        try:
            data = handler(self)
        except PydanticSerializationError:  # an object pydantic does not know, somewhere
            data = jsonable(self.model_dump(mode="python"))
        return scrub(data)


__all__ = ["REPLACEMENT", "SaveableModel", "jsonable", "scrub"]
