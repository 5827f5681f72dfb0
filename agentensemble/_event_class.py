"""``frozen_event``: ``@dataclass(frozen=True)`` for the event classes, without the code generation.

``dataclass`` compiles six methods per class from source text (``exec``), about 0.7 ms a class,
and the ~22 event classes were most of what ``from agentensemble import Agent`` cost on top of
its dependencies. Here ``dataclass`` builds only ``__init__`` and the frozen ``__setattr__`` /
``__delattr__``; ``__repr__``, ``__eq__`` and ``__hash__`` are closures over the field names
that behave exactly as the generated ones (same text, same tuple comparison, same hash), so the
classes stay real frozen dataclasses for users: ``dataclasses.fields``, ``replace``, ``asdict``,
equality, hashing, repr and ``FrozenInstanceError`` all work as before.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorator: decorator


T = TypeVar("T")


def _methods(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> dict[str, Any]:
    shown = tuple(f.name for f in fields if f.repr)
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"

    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return tuple(getattr(self, n) for n in compared) == tuple(
                getattr(other, n) for n in compared
            )
        return NotImplemented

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in hashed))

    methods = {"__repr__": __repr__, "__eq__": __eq__, "__hash__": __hash__}
    for name, method in methods.items():
        method.__qualname__ = f"{cls.__qualname__}.{name}"
    return methods


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen_event(cls: type[T]) -> type[T]:
    """Make ``cls`` a frozen dataclass with repr and equality (as ``@dataclass(frozen=True)``)."""
    made: Any = dataclasses.dataclass(frozen=True, repr=False, eq=False)(cls)
    for name, method in _methods(made, dataclasses.fields(made)).items():
        setattr(made, name, method)
    params = made.__dataclass_params__
    params.repr = params.eq = True  # what the class now has, as dataclass would record it
    return made  # type: ignore[no-any-return]
