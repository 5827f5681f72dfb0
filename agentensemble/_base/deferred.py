"""A model field whose value is made on its first read: ``EnsembleOutput.trace``.

A run records its trace as plain dicts; validating them into an ``ExecutionTrace`` was about an
eighth of a 1-tool run's CPU (issue 27), paid by every run whether or not anyone reads the
trace. The output's field now holds a ``Deferred`` until then. Every way to reach the field
gives the made value, never the placeholder:

- attribute access (``output.trace``, ``getattr``): ``DeferredField``, a data descriptor on the
  class, makes the value and stores it in the instance's ``__dict__``;
- dumps (``model_dump``, ``model_dump_json``, nested in another model, ``to_jsonable_python``):
  the field's own serializer (``EnsembleOutput._made_trace``, a pydantic ``field_serializer``)
  hands the made value on, and include/exclude and the other options apply to it as usual;
- ``==``, ``pickle``, ``copy.deepcopy``/``model_copy(deep=True)``: the made value (a shallow
  copy shares the placeholder, and so the one value, as it shared the trace before);
- ``dict(output)`` and re-validation: the model's ``__iter__`` and field validator call
  ``resolved``; so does the saving of a model whose keys must be cleaned (``_saveable``).

Only ``output.__dict__`` itself shows the placeholder. Making the value happens once, under a
lock: two threads reading at once get the same object.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

_making = threading.RLock()  # making a value is rare (a read of a trace): one lock for all


class Deferred:
    """A value made by ``make()`` when first needed, then kept (``make`` is dropped)."""

    __slots__ = ("_make", "_value")

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make: Callable[[], Any] | None = make
        self._value: Any = None

    def resolve(self) -> Any:
        if self._make is not None:
            with _making:
                make = self._make
                if make is not None:
                    self._value = make()
                    self._make = None
        return self._value

    def __eq__(self, other: object) -> Any:
        return self.resolve() == resolved(other)

    __hash__ = None  # type: ignore[assignment]  # as the made value (a trace is unhashable)

    def __repr__(self) -> str:
        return repr(self.resolve())

    def __reduce__(self) -> tuple[Callable[[Any], Any], tuple[Any]]:
        return _itself, (self.resolve(),)  # a pickle holds the value, never the maker

    def __copy__(self) -> Deferred:
        return self  # the one value, as a shallow copy of the model shared it

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return copy.deepcopy(self.resolve(), memo)


def _itself(value: Any) -> Any:
    return value


def resolved(value: Any) -> Any:
    """``value``, or the value a ``Deferred`` makes."""
    return value.resolve() if type(value) is Deferred else value


class DeferredField:
    """The class attribute of a pydantic model field that may hold a ``Deferred``: a read makes
    the value and stores it in place of the placeholder (as frozen models are, bypassing
    ``__setattr__``: the field's value does not change, only how it is held)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:  # as pydantic answers for a field on the class
            raise AttributeError(self._name)
        fields = instance.__dict__
        try:
            value = fields[self._name]
        except KeyError:  # not set (a model_construct without it): as pydantic would answer
            raise AttributeError(
                f"{type(instance).__name__!r} object has no attribute {self._name!r}"
            ) from None
        if type(value) is Deferred:
            value = fields[self._name] = value.resolve()
        return value

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self._name] = value  # reached only past the model's own __setattr__


__all__ = ["Deferred", "DeferredField", "resolved"]
