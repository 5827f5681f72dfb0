"""Tool schemas for arbitrarily nested supported types, checked with jsonschema and a round trip.

Hypothesis builds a type out of str/int/float/bool, ``list[T]``, ``dict[str, T]``,
``Optional[T]``, ``Literal[...]``, str-valued ``Enum``s and nested pydantic models, together with
a strategy for JSON data of that type. Functions with such parameters are made programmatically
(``__signature__`` and ``__annotations__``) and decorated with ``@tool``. For data the types
accept:

- the generated JSON schema is a valid Draft 2020-12 schema and accepts the data (checked with
  jsonschema when it is installed);
- the tool, given the data as the model's JSON arguments, validates it and calls the function
  with it: the function's arguments, sent back as JSON, equal the data (defaults filled in).
"""

from __future__ import annotations

import enum
import inspect
import itertools
import json
import keyword
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, create_model

from agentensemble import ToolResolver, tool
from agentensemble.tools.schema import model_parameters_schema, validate_arguments

SETTINGS = settings(max_examples=100, deadline=None)

try:
    import jsonschema  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - then the tool's own validation round trip still runs
    jsonschema = None


def check_schema_accepts(schema: dict[str, Any], data: Any) -> None:
    """The schema is a valid Draft 2020-12 schema and ``data`` conforms to it."""
    if jsonschema is None:  # pragma: no cover
        return
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)


_numbers = itertools.count(1)


@dataclass(frozen=True)
class Gen:
    """A generated type: its annotation, JSON data it accepts, and what validation fills in."""

    annotation: Any
    values: st.SearchStrategy[Any]
    complete: Callable[[Any], Any]  # the data as the function receives it, defaults added
    optional: bool = False


def _same(value: Any) -> Any:
    return value


SCALARS = [
    Gen(str, st.text(max_size=8), _same),
    Gen(int, st.integers(-(10**9), 10**9), _same),
    Gen(float, st.floats(allow_nan=False, allow_infinity=False) | st.integers(-100, 100), _same),
    Gen(bool, st.booleans(), _same),
]


@st.composite
def literals(draw: st.DrawFn) -> Gen:
    options = draw(
        st.lists(st.text(max_size=5) | st.integers(-5, 5), min_size=1, max_size=4, unique_by=repr)
    )
    return Gen(Literal[tuple(options)], st.sampled_from(options), _same)


@st.composite
def enums(draw: st.DrawFn) -> Gen:
    values = draw(st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=4, unique=True))
    members = [(f"M{i}", value) for i, value in enumerate(values)]
    kind = enum.Enum(f"Choice{next(_numbers)}", members, type=str)  # type: ignore[misc]
    return Gen(kind, st.sampled_from(values), _same)


def list_of(item: Gen) -> Gen:
    return Gen(
        list[item.annotation],  # type: ignore[name-defined]
        st.lists(item.values, max_size=3),
        lambda value: [item.complete(v) for v in value],
    )


def dict_of(item: Gen) -> Gen:
    return Gen(
        dict[str, item.annotation],  # type: ignore[name-defined]
        st.dictionaries(st.text(max_size=5), item.values, max_size=3),
        lambda value: {k: item.complete(v) for k, v in value.items()},
    )


def optional(item: Gen) -> Gen:
    return Gen(
        Optional[item.annotation],  # noqa: UP045 - the spelling under test
        st.none() | item.values,
        lambda value: None if value is None else item.complete(value),
        optional=True,
    )


field_names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name) and name not in ("self", "cls")
)


def fields_strategy(children: st.SearchStrategy[Gen]) -> st.SearchStrategy[list[tuple[str, Gen]]]:
    return st.lists(st.tuples(field_names, children), max_size=4, unique_by=lambda f: f[0])


def data_for(fields: list[tuple[str, Gen]]) -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects for these fields: every required one, some of the optional ones."""
    required = {name: gen.values for name, gen in fields if not gen.optional}
    omittable = {name: gen.values for name, gen in fields if gen.optional}
    return st.fixed_dictionaries(required, optional=omittable)


def complete_object(fields: list[tuple[str, Gen]], value: dict[str, Any]) -> dict[str, Any]:
    """An omitted optional field arrives as its default, None."""
    return {name: gen.complete(value[name]) if name in value else None for name, gen in fields}


def model_of(fields: list[tuple[str, Gen]]) -> Gen:
    definitions: dict[str, Any] = {
        name: (gen.annotation, None if gen.optional else ...) for name, gen in fields
    }
    model = create_model(f"Nested{next(_numbers)}", **definitions)
    return Gen(model, data_for(fields), lambda value: complete_object(fields, value))


def extend(children: st.SearchStrategy[Gen]) -> st.SearchStrategy[Gen]:
    return st.one_of(
        children.map(list_of),
        children.map(dict_of),
        children.map(optional),
        fields_strategy(children).map(model_of),
    )


types = st.recursive(st.sampled_from(SCALARS) | literals() | enums(), extend, max_leaves=8)


@dataclass(frozen=True)
class Param:
    name: str
    gen: Gen
    description: str | None


params = st.lists(
    st.builds(Param, field_names, types, st.none() | st.text(min_size=1, max_size=12)),
    max_size=5,
    unique_by=lambda p: p.name,
)


def make_function(parameters: list[Param]) -> Callable[..., Any]:
    """A function with exactly these typed keyword parameters; it returns what it received."""

    def generated(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    signature = []
    annotations: dict[str, Any] = {}
    for param in parameters:
        annotation = param.gen.annotation
        if param.description is not None:
            annotation = Annotated[annotation, param.description]
        default = None if param.gen.optional else inspect.Parameter.empty
        signature.append(
            inspect.Parameter(
                param.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
        annotations[param.name] = annotation
    generated.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    generated.__annotations__ = annotations
    generated.__doc__ = "A generated tool."
    return generated


@SETTINGS
@given(parameters=params, data=st.data())
def test_function_schemas_accept_what_the_types_accept(
    parameters: list[Param], data: st.DataObject
) -> None:
    fields = [(p.name, p.gen) for p in parameters]
    arguments = data.draw(data_for(fields), label="arguments")
    [executable] = ToolResolver().resolve([tool(name="generated")(make_function(parameters))])
    schema = executable.parameters

    check_schema_accepts(schema, arguments)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == [p.name for p in parameters]
    assert set(schema.get("required", [])) == {p.name for p in parameters if not p.gen.optional}
    for param in parameters:
        if param.description is not None:
            assert schema["properties"][param.name]["description"] == param.description

    result = anyio.run(executable.run, json.dumps(arguments))
    assert result.is_success, result.error_message
    assert json.loads(result.output) == complete_object(fields, arguments)


@SETTINGS
@given(fields=fields_strategy(types), data=st.data())
def test_model_schemas_accept_what_the_model_accepts(
    fields: list[tuple[str, Gen]], data: st.DataObject
) -> None:
    model: type[BaseModel] = model_of(fields).annotation
    value = data.draw(data_for(fields), label="value")
    schema = model_parameters_schema(model)

    check_schema_accepts(schema, value)
    parsed = validate_arguments(model, json.dumps(value), "typed")
    assert json.loads(parsed.model_dump_json()) == complete_object(fields, value)


@SETTINGS
@given(parameters=params, data=st.data())
def test_an_omitted_required_parameter_is_named_in_the_failure(
    parameters: list[Param], data: st.DataObject
) -> None:
    required = [p for p in parameters if not p.gen.optional]
    if not required:
        return
    fields = [(p.name, p.gen) for p in parameters]
    arguments = data.draw(data_for(fields), label="arguments")
    dropped = data.draw(st.sampled_from(required), label="dropped")
    del arguments[dropped.name]
    [executable] = ToolResolver().resolve([tool(name="generated")(make_function(parameters))])

    result = anyio.run(executable.run, json.dumps(arguments))

    assert not result.is_success
    assert result.error_message is not None
    assert result.error_message.startswith("Invalid arguments for 'generated': ")
    assert f"{dropped.name}: Field required" in result.error_message
