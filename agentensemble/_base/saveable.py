"""Making what a run produced always saveable as JSON, whatever a tool or model put in it.

A tool may return any object (kept as ``structured_output``), and text from a model, a tool or
``os.listdir`` may hold lone surrogates (``"\\ud800"``) that UTF-8 cannot encode. Either made
``model_dump_json()`` raise, so a finished run could not be saved. Here unknown objects become
their text and lone surrogates become U+FFFD, in JSON output only: the Python objects stay as
they were. That holds for dict keys too (``parsed``, a tool's result, tool metrics, loop
names): pydantic encodes a key as UTF-8 while building the JSON data, so a lone surrogate in an
untyped dict's key failed the whole dump (and one in a typed ``dict[str, ...]``'s key became
three U+FFFD). Then a copy of the model with its keys cleaned is saved instead, every part as
usual.

A model nested in another (a task's output in a run's, a model turn in a trace) is cleaned by
the outermost model being saved, once, with everything else: each level cleaned its part and
the parent all of it again, the 20-turn output's JSON most of its time (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer
from pydantic_core import (
    PydanticSerializationError,
    SchemaSerializer,
    core_schema,
    to_json,
    to_jsonable_python,
)

from agentensemble._base.deferred import resolved

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
_LOSSY_TEXT = REPLACEMENT * 3  # how pydantic writes one lone surrogate in a typed key
_LOSSY_KEY = _LOSSY_TEXT.encode()

# set while a SaveableModel's JSON is being built: the models inside it leave the cleaning to it
_cleaning: ContextVar[bool] = ContextVar("agentensemble_saveable_cleaning", default=False)
_UNKNOWN = object()
_python_dumper: SchemaSerializer | None = None  # built on first use: import time counts


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
    except Exception:  # a lone surrogate in a dict key, a circular reference and the like
        pass
    try:  # keys cleaned in the dicts, lists and models as they are, then in a Python-mode dump
        cleaned = _keys_cleaned(value)  # (which reaches into dataclasses too)
        if cleaned is not value:
            try:
                return _scrubbed(to_jsonable_python(cleaned, fallback=_text))
            except Exception:
                pass
        return _scrubbed(to_jsonable_python(_keys_cleaned(_as_python(value)), fallback=_text))
    except Exception:  # circular references and the like
        return scrub(_text(value))


def _as_python(value: Any) -> Any:
    """``value`` with the models and dataclasses in it dumped in Python mode, which leaves keys
    as they are (JSON mode encodes each key as UTF-8, and a lone surrogate fails that)."""
    global _python_dumper
    if _python_dumper is None:
        _python_dumper = SchemaSerializer(core_schema.any_schema())
    return _python_dumper.to_python(value)


def _keys_cleaned(value: Any) -> Any:
    """``value`` with every lone surrogate in a dict key replaced, in the dicts, lists, tuples
    and pydantic models it holds (a model as a copy); ``value`` itself if it had none. Values
    are left to ``scrub``, which runs on the JSON-ready data."""
    if isinstance(value, dict):
        cleaned = {
            (scrub(key) if isinstance(key, str) else key): _keys_cleaned(item)
            for key, item in value.items()
        }
        changed = any(
            new_key is not key or new is not item
            for (key, item), (new_key, new) in zip(value.items(), cleaned.items(), strict=False)
        )
        return cleaned if changed or len(cleaned) != len(value) else value
    if isinstance(value, list | tuple):
        items = [_keys_cleaned(item) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, BaseModel):
        update = {}
        for name, held in value.__dict__.items():
            item = resolved(held)  # a trace left to its first read (_deferred.py)
            new = _keys_cleaned(item)
            if new is not item:
                update[name] = new
        return value.model_copy(update=update) if update else value
    return value


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
    return _scrubbed_seen(data)[0]


def _scrubbed_seen(data: Any) -> tuple[Any, bool]:
    """``_scrubbed(data)``, and whether its JSON may hold a key pydantic made lossy: a typed
    ``dict[str, ...]`` key with a lone surrogate becomes one U+FFFD per UTF-8 byte (three),
    where everywhere else one lone surrogate is one U+FFFD."""
    try:
        encoded = to_json(data)
    except Exception:  # a lone surrogate, or something odd: the walk decides, as it always did
        lossy: list[str] = []
        return _scrub_noting(data, lossy), bool(lossy)
    return data, _LOSSY_KEY in encoded


def _scrub_noting(value: Any, lossy: list[str]) -> Any:
    """``scrub(value)``, noting in ``lossy`` the keys that may be a typed key pydantic made
    lossy (the walk visits every key anyway: no second encoding to find them)."""
    if isinstance(value, str):
        return value if value.isascii() else _LONE_SURROGATE.sub(REPLACEMENT, value)
    if isinstance(value, dict):
        cleaned = {}
        for key, item in value.items():
            if isinstance(key, str) and not key.isascii():
                if _LOSSY_TEXT in key:
                    lossy.append(key)
                key = _LONE_SURROGATE.sub(REPLACEMENT, key)
            cleaned[key] = _scrub_noting(item, lossy)
        return cleaned
    if isinstance(value, list):
        return [_scrub_noting(item, lossy) for item in value]
    return value


def _keys_cleaned_json(model: BaseModel, handler: SerializerFunctionWrapHandler) -> Any:
    """The JSON-ready data of a copy of ``model`` whose dict keys have no lone surrogate (the
    JSON of every part as usual); ``_UNKNOWN`` if that fails too (an object pydantic does not
    know, a key out of reach inside a dataclass): then the Python-mode dump is saved."""
    outer = _cleaning.set(True)  # the models inside leave the cleaning to this one
    try:
        cleaned = _keys_cleaned(model)
        return _UNKNOWN if cleaned is model else handler(cleaned)
    except Exception:
        return _UNKNOWN
    finally:
        _cleaning.reset(outer)


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
        except UnicodeEncodeError:  # a lone surrogate in a dict key: pydantic encodes keys
            data = _keys_cleaned_json(self, handler)  # (values are scrubbed afterwards)
        except PydanticSerializationError:  # an object pydantic does not know, somewhere
            data = _UNKNOWN
        finally:
            _cleaning.reset(outer)
        if data is _UNKNOWN:
            return jsonable(self.model_dump(mode="python"))  # cleaned by jsonable
        if inside:
            return data
        data, lossy = _scrubbed_seen(data)
        if lossy:  # maybe a typed key with a lone surrogate: one U+FFFD for it, as elsewhere
            cleaned = _keys_cleaned_json(self, handler)
            if cleaned is not _UNKNOWN:
                data = _scrubbed(cleaned)
        return data


__all__ = ["REPLACEMENT", "SaveableModel", "jsonable", "scrub"]
