"""``agentensemble._base.dataclass.dataclass`` behaves as ``dataclasses.dataclass``, class for
class.

Each shape below is defined twice, once with the stock decorator and once with ours, and every
behaviour a user can see is compared: construction (positional, keyword, defaults, factories,
errors), repr, equality, hashing, frozen errors, ``fields``, ``replace``, ``asdict``, pickling,
``__match_args__``, ``__doc__`` and ``inspect.signature`` (before and after the first
construction, when ours builds its ``__init__``). Then every dataclass the package defines is
compared with a stock rebuild of its fields.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import sys
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

import agentensemble
from agentensemble._base import dataclass as _dataclass_module
from agentensemble._base.dataclass import dataclass as lean

Decorator = Callable[..., Any]


def _shapes(deco: Decorator) -> dict[str, type]:
    """The same classes, made by ``deco``; registered in this module so they pickle."""

    @deco(frozen=True)
    class Frozen:
        a: int
        b: str = "x"
        c: list[int] = dataclasses.field(default_factory=list, compare=False)
        d: int = dataclasses.field(default=0, kw_only=True)

    @deco
    class Mutable:
        a: int
        b: int = dataclasses.field(default=2, repr=False)
        c: int = dataclasses.field(default=3, init=False)

    @deco(frozen=True, eq=False)
    class FrozenNoEq:
        """Has its own docstring."""

        a: int

    @deco(frozen=True)
    class Posted:
        a: int
        b: int = dataclasses.field(init=False, default=0)

        def __post_init__(self) -> None:
            object.__setattr__(self, "b", self.a * 2)

    @deco(frozen=True)
    class OwnMethods:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

    @deco(frozen=True)
    class Empty:
        pass

    @deco(frozen=True)
    class Hashing:
        a: int
        b: int = dataclasses.field(default=0, hash=False)
        c: int = dataclasses.field(default=0, compare=False, hash=True)

    @deco(frozen=True)
    class WithClassVar:
        a: int
        k: ClassVar[int] = 3
        b: int = 1

    @deco
    class WithInitVar:
        a: int
        seed: dataclasses.InitVar[int] = 0
        b: int = dataclasses.field(init=False, default=0)

        def __post_init__(self, seed: int) -> None:
            self.b = self.a + seed

    made = (Frozen, Mutable, FrozenNoEq, Posted, OwnMethods, Empty, Hashing)
    return {cls.__name__: cls for cls in (*made, WithClassVar, WithInitVar)}


STOCK = _shapes(dataclasses.dataclass)
LEAN = _shapes(lean)
for _prefix, _classes in (("Stock", STOCK), ("Lean", LEAN)):
    for _name, _cls in _classes.items():
        _cls.__qualname__ = _cls.__name__ = f"{_prefix}{_name}"
        globals()[_cls.__name__] = _cls

ARGS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "Frozen": ((1,), {"b": "y", "c": [1], "d": 4}),
    "Mutable": ((1, 5), {}),
    "FrozenNoEq": ((1,), {}),
    "Posted": ((3,), {}),
    "OwnMethods": ((1,), {}),
    "Empty": ((), {}),
    "Hashing": ((1,), {"b": 2, "c": 3}),
    "WithClassVar": ((1,), {"b": 2}),
    "WithInitVar": ((1,), {"seed": 5}),
}


def _unprefixed(text: str, prefix: str) -> str:
    # the stock methods were named before the classes were renamed; ours on first construction
    return text.replace("_shapes.<locals>.", "").replace(prefix, "")


def _view(cls: type, prefix: str, fresh: bool) -> dict[str, Any]:
    """What a user sees of ``cls`` and of instances built from ``ARGS``."""
    name = cls.__name__.removeprefix(prefix)
    args, kwargs = ARGS[name]
    seen: dict[str, Any] = {}
    if fresh:  # before any construction: ours has not built its __init__ yet
        seen["signature_before"] = str(inspect.signature(cls))
    one, two = cls(*args, **kwargs), cls(*args, **kwargs)
    seen["doc"] = _unprefixed(cls.__doc__ or "", prefix)
    seen["signature"] = str(inspect.signature(cls))
    seen["repr"] = _unprefixed(repr(one), prefix)
    seen["eq"] = (one == two, one != two, one == object(), one.__eq__(object()))
    seen["hash"] = cls.__hash__ is None or hash(one) == hash(two)
    seen["hash_value"] = None if cls.__hash__ is None else hash(one) == hash(copy.copy(one))
    seen["fields"] = [
        (f.name, f.type, f.default, f.init, f.repr, f.compare, f.hash, f.kw_only)
        for f in dataclasses.fields(cls)
    ]
    seen["asdict"] = dataclasses.asdict(one)
    seen["match_args"] = cls.__match_args__
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    seen["params"] = (params.init, params.repr, params.eq, params.order, params.frozen)
    seen["pickle"] = _unprefixed(repr(pickle.loads(pickle.dumps(one))), prefix)
    seen["init_qualname"] = _unprefixed(cls.__init__.__qualname__, prefix)
    seen["repr_qualname"] = _unprefixed(cls.__repr__.__qualname__, prefix)
    if dataclasses.fields(cls):
        first = dataclasses.fields(cls)[0].name
        seen["replace"] = _unprefixed(repr(dataclasses.replace(one, **{first: 9})), prefix)
        try:
            setattr(one, first, 5)
            seen["set"] = getattr(one, first)
        except dataclasses.FrozenInstanceError as error:
            seen["set"] = str(error)
        try:
            delattr(one, first)
            seen["del"] = "deleted"
        except dataclasses.FrozenInstanceError as error:
            seen["del"] = str(error)
    try:
        cls(*args, *args, "extra", **kwargs)
    except TypeError as error:
        seen["too_many"] = _unprefixed(str(error), prefix)
    return seen


@pytest.mark.parametrize("name", sorted(STOCK))
def test_each_shape_behaves_as_the_stock_dataclass(name: str) -> None:
    stock, ours = STOCK[name], LEAN[name]
    assert _view(ours, "Lean", fresh=True) == _view(stock, "Stock", fresh=True)
    # and again, now that ours has built its __init__
    assert _view(ours, "Lean", fresh=False) == _view(stock, "Stock", fresh=False)


def test_the_init_is_built_once_then_is_the_generated_one() -> None:
    @lean(frozen=True)
    class Once:
        a: int

    placeholder = Once.__dict__["__init__"]
    Once(1)
    built = Once.__dict__["__init__"]
    assert built is not placeholder
    Once(2)
    assert Once.__dict__["__init__"] is built
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        Once()


def test_subclasses_of_a_lean_class_work_as_with_a_stock_one() -> None:
    @lean(frozen=True)
    class Base:
        a: int

    class Plain(Base):
        pass

    @dataclasses.dataclass(frozen=True)
    class Stocked(Base):
        b: int = 0

    assert (
        repr(Plain(1))
        == "test_subclasses_of_a_lean_class_work_as_with_a_stock_one.<locals>.Plain(a=1)"
    )
    assert Stocked(1, 2).b == 2 and dataclasses.fields(Stocked)[0].name == "a"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Stocked(1).a = 3  # type: ignore[misc]
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):

        @dataclasses.dataclass
        class Thawed(Base):
            pass


def test_a_default_before_a_required_field_fails_at_definition_as_stock_does() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @lean
        class Wrong:
            a: int = 0
            b: int  # type: ignore[misc]


def _package_dataclasses() -> list[type]:
    for name in agentensemble.__all__:  # every public name, and what it imports
        getattr(agentensemble, name)
    found = []
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("agentensemble"):
            continue
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and dataclasses.is_dataclass(value)
                and value.__module__ == module.__name__
                and _generated_init(value)
            ):
                found.append(value)
    return found


def _generated_init(cls: type) -> bool:
    """Whether ``cls.__init__`` is dataclasses' own (or ours, before it is built)."""
    code = getattr(cls.__dict__.get("__init__"), "__code__", None)
    return code is not None and code.co_filename in ("<string>", _dataclass_module.__file__)


def _stock_rebuild(cls: type) -> type:
    specs: dict[str, Any] = {"__annotations__": {}, "__module__": cls.__module__}
    for f in dataclasses.fields(cls):
        specs["__annotations__"][f.name] = f.type
        specs[f.name] = dataclasses.field(
            default=f.default,
            default_factory=f.default_factory,
            init=f.init,
            repr=f.repr,
            hash=f.hash,
            compare=f.compare,
            metadata=f.metadata,
            kw_only=f.kw_only,
        )
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    rebuilt = type(cls.__name__, (), specs)
    return dataclasses.dataclass(frozen=params.frozen, eq=params.eq)(rebuilt)


def test_every_dataclass_of_the_package_has_the_stock_signature_and_methods() -> None:
    classes = _package_dataclasses()
    assert len(classes) > 50
    for cls in classes:
        if any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:]):
            continue  # inherited fields: made by the stock decorator, nothing to compare
        stock = _stock_rebuild(cls)
        assert str(inspect.signature(cls)) == str(inspect.signature(stock)), cls
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert (params.init, params.repr) == (True, True), cls
        assert cls.__match_args__ == stock.__match_args__, cls  # type: ignore[attr-defined]
        assert (cls.__hash__ is None) == (stock.__hash__ is None), cls
        if cls.__doc__ and cls.__doc__.startswith(cls.__name__ + "("):
            assert cls.__doc__ == stock.__doc__, cls


CV = ClassVar  # an alias dataclasses still reads as ClassVar in a string annotation


def _twins(body: dict[str, Any]) -> tuple[type, type]:
    made: list[type] = []
    for deco in (dataclasses.dataclass(frozen=True), lean(frozen=True)):
        made.append(deco(type("Twin", (), {"__module__": __name__, **body})))
    return made[0], made[1]


def _class_view(cls: type) -> dict[str, Any]:
    names = [f.name for f in dataclasses.fields(cls)]
    return {
        "fields": repr(cls.__dataclass_fields__),  # type: ignore[attr-defined]
        "class_attributes": {k: v for k, v in vars(cls).items() if k in (*names, "k")},
        "match_args": cls.__match_args__,  # type: ignore[attr-defined]
        "params": repr(cls.__dataclass_params__),  # type: ignore[attr-defined]
        "replace": "__replace__" in vars(cls),
    }


@pytest.mark.parametrize(
    "body",
    [
        {"__annotations__": {"a": "int", "b": "str"}, "b": "x"},
        {
            "__annotations__": {"a": "int", "b": "list[int]"},
            "b": dataclasses.field(default_factory=list),
        },
        {
            "__annotations__": {"a": "int", "b": "int"},
            "b": dataclasses.field(default=1, repr=False),
        },
        {
            "__annotations__": {"a": "int", "b": "int"},
            "b": dataclasses.field(default=1, kw_only=True),
        },
        {"__annotations__": {"a": "int", "k": "CV[int]"}, "k": 3},
        {"__annotations__": {"a": "int", "k": "typing.ClassVar[int]"}, "k": 3},
        {"__annotations__": {"a": int, "k": ClassVar[int]}, "k": 3},
    ],
)
def test_fields_are_collected_as_dataclasses_collects_them(body: dict[str, Any]) -> None:
    stock, ours = _twins(body)
    assert _class_view(ours) == _class_view(stock)


def test_definition_errors_are_the_stock_ones() -> None:
    for body in (
        {"__annotations__": {"a": "list[int]"}, "a": []},  # a mutable default
        {"__annotations__": {"a": "int"}, "b": dataclasses.field(default=1)},  # no annotation
    ):
        with pytest.raises((TypeError, ValueError)) as stock_error:
            dataclasses.dataclass(type("Wrong", (), {"__module__": __name__, **body}))
        with pytest.raises((TypeError, ValueError)) as our_error:
            lean(type("Wrong", (), {"__module__": __name__, **body}))
        assert repr(our_error.value) == repr(stock_error.value)


@pytest.mark.skipif(not hasattr(copy, "replace"), reason="copy.replace is Python 3.13+")
def test_copy_replace_works_as_on_a_stock_dataclass() -> None:
    stock, ours = _twins({"__annotations__": {"a": "int", "b": "int"}, "b": 2})
    replace = copy.replace  # type: ignore[attr-defined]
    assert replace(ours(1), b=5).b == replace(stock(1), b=5).b == 5


def test_a_frozen_init_stores_the_fields_as_the_generated_one_does() -> None:
    # ours is the one dataclasses generates (``object.__setattr__`` per field), built on first
    # use: the same values, in the same order, with the same defaults, factories,
    # keyword-only fields, fields left out of ``__init__`` and ``__post_init__``
    made = []

    def factory() -> list[int]:
        made.append(1)
        return [len(made)]

    for ours_now, deco in ((False, dataclasses.dataclass(frozen=True)), (True, lean(frozen=True))):

        @deco
        class Shape:
            a: int
            b: str = "x"
            c: list[int] = dataclasses.field(default_factory=factory)
            d: int = dataclasses.field(default=0, kw_only=True)
            e: list[int] = dataclasses.field(default_factory=list, init=False)
            f: int = dataclasses.field(default=5, init=False)
            g: int = dataclasses.field(default_factory=lambda: 9, kw_only=True)

            def __post_init__(self) -> None:
                object.__setattr__(self, "f", self.a + 1)

        made.clear()
        built = (Shape(1), Shape(1, "y", [7], d=3, g=4))
        seen = [*(list(vars(one).items()) for one in built), list(made)]  # in store order
        if ours_now:
            assert "__setattr__" in Shape.__dict__["__init__"].__code__.co_names
            ours = seen
        else:
            stock = seen
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
            Shape()
        with pytest.raises(dataclasses.FrozenInstanceError):
            Shape(1).a = 2  # type: ignore[misc]
    assert ours == stock
    assert [name for name, _ in ours[1]] == ["a", "b", "c", "d", "e", "g", "f"]


def test_a_frozen_class_whose_store_does_more_gets_what_the_store_does() -> None:
    # a descriptor-typed field (its __set__ runs on every store) and a class with slots (no
    # __dict__): the generated __init__, whose object.__setattr__ does that
    stored: list[int] = []

    class Doubled:
        def __set_name__(self, owner: type, name: str) -> None:
            self.name = "_" + name

        def __get__(self, obj: object, owner: type | None = None) -> int:
            return 0 if obj is None else getattr(obj, self.name)

        def __set__(self, obj: object, value: int) -> None:
            stored.append(value)
            object.__setattr__(obj, self.name, value * 2)

    @lean(frozen=True)
    class Described:
        a: Doubled = Doubled()

    assert Described(3).a == 6 and stored == [3]
    assert "__setattr__" in Described.__dict__["__init__"].__code__.co_names

    @lean(frozen=True)
    class Slotted:
        __slots__ = ("a",)
        a: int

    assert Slotted(4).a == 4
    assert "__setattr__" in Slotted.__dict__["__init__"].__code__.co_names


def test_a_slots_class_is_the_stock_slots_dataclass() -> None:
    # the records a run builds on every turn (ToolCall, ChatResponse, ...) are slots classes
    made = []
    for deco in (dataclasses.dataclass(slots=True), lean(slots=True)):

        @deco
        class Record:
            a: int
            b: list[int] = dataclasses.field(default_factory=list)
            c: str = "x"

        one = Record(1, [2])
        assert not hasattr(one, "__dict__") and Record.__slots__ == ("a", "b", "c")
        one.c = "y"
        with pytest.raises(AttributeError):
            one.d = 1  # type: ignore[attr-defined]
        assert Record.__hash__ is None
        made.append(
            (
                repr(one).split(".")[-1],
                one == Record(1, [2], "y"),
                str(inspect.signature(Record)),
                [f.name for f in dataclasses.fields(Record)],
                Record.__match_args__,  # type: ignore[attr-defined]
                dataclasses.replace(one, a=3).a,
                dataclasses.asdict(one),
            )
        )
    assert made[0] == made[1]


def test_the_records_a_run_builds_are_slots_classes() -> None:
    from agentensemble.execution.tool_turn import _CallOutcome
    from agentensemble.llm.types import ChatResponse, ToolCall
    from agentensemble.run_context import ModelCallScope
    from agentensemble.tools._gate import ToolCallResult

    for cls in (ToolCall, ChatResponse, ModelCallScope, ToolCallResult, _CallOutcome):
        assert "__slots__" in vars(cls), cls
        assert not cls.__dataclass_params__.frozen, cls  # type: ignore[attr-defined]


def test_the_classes_copied_without_init_have_no_post_init() -> None:
    # StepCall.at, AgentTask.for_run and ContextItems.extended copy with object.__new__ and
    # skip __init__ (a third of dataclasses.replace's cost): a __post_init__ added to one of
    # them later would be skipped silently, so this fails first
    from agentensemble.execution.agent_executor import AgentTask
    from agentensemble.execution.prompts import ContextItems
    from agentensemble.workflows.step import StepCall

    for cls in (StepCall, AgentTask, ContextItems):
        assert not hasattr(cls, "__post_init__"), cls
    for cls in (StepCall, AgentTask):  # the generated __init__ only stores the fields
        assert _generated_init(cls), cls
    # what ContextItems.__init__ sets is what extended() sets by hand, and nothing else
    assert set(ContextItems.__init__.__code__.co_names) <= {
        *("list", "len", "section"),
        *ContextItems.__slots__,
    }
