"""``dataclass``: ``dataclasses.dataclass`` without compiling methods at import time.

``dataclasses.dataclass`` writes ``__init__``, ``__repr__``, ``__eq__`` (and for frozen classes
``__hash__``, ``__setattr__``, ``__delattr__``) as source text and ``exec``s each one when the
class is defined: about 1 ms a class on this machine, and the ~60 dataclasses that ``from
agentensemble import Agent, Ensemble, Task, tool`` defines cost about half of what that line adds
to its dependencies. Here:

- ``__repr__``, ``__eq__``, ``__hash__`` and the frozen ``__setattr__`` / ``__delattr__`` are
  closures over the field names that behave as the generated ones (same text, same tuple
  comparison, same hash, same ``FrozenInstanceError`` messages);
- ``__init__`` is the one ``dataclasses`` generates, built on the class's first construction (so
  no cost at import, and none after the first call: it replaces itself). Until then
  ``inspect.signature`` sees the signature the generated one will have, and ``__doc__`` is the
  one ``dataclasses`` writes;
- the fields are collected by ``dataclasses`` itself (``init=False, repr=False, eq=False``:
  nothing is compiled), so ``ClassVar``, ``KW_ONLY``, defaults and errors are its own.

The classes stay real dataclasses: ``dataclasses.fields``, ``replace``, ``asdict``,
``__match_args__``, ``__dataclass_params__``, pickling and stock ``@dataclass`` subclasses work as
before (``tests/_base/test_dataclass.py`` compares every such class of the package with a stock
twin).
Options beyond ``frozen``, ``eq`` and ``slots``, explicit ``__setattr__`` on a frozen class,
``InitVar`` fields and frozen inheritance go to ``dataclasses.dataclass`` unchanged. Type
checkers see ``dataclasses.dataclass`` itself.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import reprlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

__all__ = ["dataclass"]


@functools.cache
def _factory_marker() -> Any:
    """What ``dataclasses`` shows as the default of a field with a default factory
    (``<factory>``), read from the signature of a stock dataclass: made once, on first need."""
    probe: Any = dataclasses.dataclass(
        type(
            "_Probe",
            (),
            {
                "__annotations__": {"a": "list"},
                "a": dataclasses.field(default_factory=list),
                "__doc__": "-",  # else dataclasses writes one with ``inspect`` (slow, unused)
            },
        )
    )
    return inspect.signature(probe).parameters["a"].default


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of these attributes of an object, read in C (``operator.attrgetter``): as fast
    as the ``(self.a, self.b)`` that ``dataclasses`` compiles."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return operator.attrgetter(*names)


def _methods(cls: type, fields: tuple[dataclasses.Field[Any], ...], eq: bool) -> dict[str, Any]:
    shown = _values(tuple(f.name for f in fields if f.repr))
    template = "(" + ", ".join(f"{f.name}={{!r}}" for f in fields if f.repr) + ")"
    compared = _values(tuple(f.name for f in fields if f.compare))

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        name: str = self.__class__.__qualname__
        return name + template.format(*shown(self))

    methods: dict[str, Any] = {"__repr__": __repr__}
    if eq:

        def __eq__(self: Any, other: object) -> Any:
            if other.__class__ is self.__class__:
                return compared(self) == compared(other)
            return NotImplemented

        methods["__eq__"] = __eq__
    return methods


def _hash(fields: tuple[dataclasses.Field[Any], ...]) -> Callable[[Any], int]:
    hashed = _values(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))

    def __hash__(self: Any) -> int:
        return hash(hashed(self))

    return __hash__


def _frozen(cls: Any, fields: tuple[dataclasses.Field[Any], ...]) -> dict[str, Any]:
    names = tuple(f.name for f in fields)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return {"__setattr__": __setattr__, "__delattr__": __delattr__}


def _signature(fields: tuple[dataclasses.Field[Any], ...]) -> inspect.Signature:
    """The signature of the ``__init__`` that ``dataclasses`` generates for these fields."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("self", kind)]
    seen_default = False
    for f in fields:  # the same check, and the same message, as dataclasses' own
        if f.init and not f.kw_only:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
    for keyword in (False, True):
        for f in fields:
            if not f.init or f.kw_only is not keyword:
                continue
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = _factory_marker()
            else:
                default = inspect.Parameter.empty
            params.append(
                inspect.Parameter(
                    f.name,
                    inspect.Parameter.KEYWORD_ONLY if keyword else kind,
                    default=default,
                    annotation=f.type,
                )
            )
    return inspect.Signature(params, return_annotation=None)


def _first_init(cls: type, frozen: bool, signature: inspect.Signature) -> Callable[..., None]:
    """An ``__init__`` that builds the generated one on the first construction, then is gone."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        # a subclass of ``cls`` with no fields of its own: dataclasses writes the very
        # ``__init__`` it would write for ``cls`` (the fields are inherited), and only that
        twin = type(
            cls.__name__,
            (cls,),
            {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": "-"},
        )
        made: Any = dataclasses.dataclass(frozen=frozen, repr=False, eq=False)(twin)
        built = made.__init__
        if cls.__dict__.get("__init__") is __init__:
            type.__setattr__(cls, "__init__", built)
        built(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__signature__ = signature  # type: ignore[attr-defined]
    return __init__


def _lean(cls: type, frozen: bool, eq: bool, slots: bool) -> type:
    own = cls.__dict__
    if (
        "__init__" in own
        or (frozen and ("__setattr__" in own or "__delattr__" in own))  # stock refuses these
        or any(getattr(base, "__dataclass_params__", None) for base in cls.__mro__[1:])
        or any("InitVar" in str(hint) for hint in own.get("__annotations__", {}).values())
    ):  # rare shapes (none in the package): the stock decorator, unchanged
        return dataclasses.dataclass(frozen=frozen, eq=eq, slots=slots)(cls)
    had_doc = bool(own.get("__doc__"))
    if not had_doc:
        cls.__doc__ = "-"  # written below, from the signature, without a wasted inspection here
    made: Any = dataclasses.dataclass(init=False, repr=False, eq=False, slots=slots)(cls)
    own = made.__dict__  # with slots: a new class
    fields = dataclasses.fields(made)  # ClassVar pseudo-fields are in none of the methods
    signature = _signature(fields)
    added: dict[str, Any] = {"__init__": _first_init(made, frozen, signature)}
    added.update(_methods(made, fields, eq))
    class_hash = own.get("__hash__", dataclasses.MISSING)
    explicit_hash = not (
        class_hash is dataclasses.MISSING or (class_hash is None and "__eq__" in own)
    )
    if eq and not explicit_hash:
        added["__hash__"] = _hash(fields) if frozen else None
    if frozen:
        added.update(_frozen(made, fields))
    for name, method in added.items():
        if name in own and name not in ("__hash__",):
            continue  # as dataclasses: a method the class defines itself is kept
        if method is not None:
            method.__qualname__ = f"{made.__qualname__}.{name}"
        setattr(made, name, method)
    if not had_doc:  # as dataclasses writes it: the class's signature, ``self`` left out
        unbound = signature.replace(parameters=list(signature.parameters.values())[1:])
        made.__doc__ = made.__name__ + str(unbound).replace(" -> None", "")
    dc_params = made.__dataclass_params__
    dc_params.init = dc_params.repr = True
    dc_params.eq = eq
    dc_params.frozen = frozen
    return made  # type: ignore[no-any-return]


if TYPE_CHECKING:
    from dataclasses import dataclass
else:

    def dataclass(cls=None, /, *, frozen=False, eq=True, slots=False, **options):
        """``dataclasses.dataclass``, with its methods made without ``exec`` (see the module)."""
        if options:
            return dataclasses.dataclass(cls, frozen=frozen, eq=eq, slots=slots, **options)

        def wrap(cls):
            return _lean(cls, frozen, eq, slots)

        return wrap if cls is None else wrap(cls)
