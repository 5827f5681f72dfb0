"""JSON schemas from function signatures, docstring parsing and argument validation: tables."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from agentensemble.errors import ConfigurationError, ToolArgumentsError
from agentensemble.tools.schema import (
    clean_schema,
    function_schema,
    model_parameters_schema,
    parse_docstring,
    validate_arguments,
)


class Unit(str, Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Priority(int, Enum):
    LOW = 1
    HIGH = 2


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = "Oslo"


class Person(BaseModel):
    name: str
    address: Address


# -- one function per row -------------------------------------------------------------------


def scalars(text: str, count: int, ratio: float, flag: bool) -> None: ...


def containers(tags: list[str], scores: dict[str, float], matrix: list[list[int]]) -> None: ...


def enums(unit: Unit, priority: Priority, mode: Literal["fast", "slow"]) -> None: ...


def optional_and_defaults(
    city: str,
    country: Optional[str] = None,  # noqa: UP045 - the typing.Optional spelling, on purpose
    region: str | None = None,
    days: int = 3,
    unit: Unit = Unit.CELSIUS,
) -> None: ...


def nested(person: Person, people: list[Person]) -> None: ...


def annotated(
    query: Annotated[str, "what to search for"],
    limit: Annotated[int, Field(description="how many results", ge=1, le=50)] = 10,
) -> None: ...


def no_parameters() -> None: ...


def untyped(anything) -> None:  # type: ignore[no-untyped-def]
    ...


def with_docstring(city: str, days: int = 1) -> None:
    """Get the weather forecast.

    Uses the national weather service.

    Args:
        city: The city to forecast,
            e.g. "Oslo".
        days (int): How many days ahead.

    Returns:
        The forecast as text.
    """


def title_named(title: str) -> None:
    """A parameter called "title" survives the title cleaning."""


S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


ADDRESS = {
    "description": "A postal address.",
    "type": "object",
    "properties": {"street": S, "city": {"type": "string", "default": "Oslo"}},
    "required": ["street"],
}
PERSON = {
    "type": "object",
    "properties": {"name": S, "address": {"$ref": "#/$defs/Address"}},
    "required": ["name", "address"],
}

SCHEMAS = [
    (
        scalars,
        _object(
            {"text": S, "count": I, "ratio": {"type": "number"}, "flag": {"type": "boolean"}},
            ["text", "count", "ratio", "flag"],
        ),
    ),
    (
        containers,
        _object(
            {
                "tags": {"type": "array", "items": S},
                "scores": {"type": "object", "additionalProperties": {"type": "number"}},
                "matrix": {"type": "array", "items": {"type": "array", "items": I}},
            },
            ["tags", "scores", "matrix"],
        ),
    ),
    (
        enums,
        {
            **_object(
                {
                    "unit": {"$ref": "#/$defs/Unit"},
                    "priority": {"$ref": "#/$defs/Priority"},
                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                },
                ["unit", "priority", "mode"],
            ),
            "$defs": {
                "Unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "Priority": {"type": "integer", "enum": [1, 2]},
            },
        },
    ),
    (
        optional_and_defaults,
        {
            **_object(
                {
                    "city": S,
                    "country": {"anyOf": [S, {"type": "null"}], "default": None},
                    "region": {"anyOf": [S, {"type": "null"}], "default": None},
                    "days": {"type": "integer", "default": 3},
                    "unit": {"$ref": "#/$defs/Unit", "default": "celsius"},
                },
                ["city"],
            ),
            "$defs": {"Unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        },
    ),
    (
        nested,
        {
            **_object(
                {
                    "person": {"$ref": "#/$defs/Person"},
                    "people": {"type": "array", "items": {"$ref": "#/$defs/Person"}},
                },
                ["person", "people"],
            ),
            "$defs": {"Address": ADDRESS, "Person": PERSON},
        },
    ),
    (
        annotated,
        _object(
            {
                "query": {"type": "string", "description": "what to search for"},
                "limit": {
                    "type": "integer",
                    "description": "how many results",
                    "minimum": 1,
                    "maximum": 50,
                    "default": 10,
                },
            },
            ["query"],
        ),
    ),
    (no_parameters, _object({}, [])),
    (untyped, _object({"anything": {}}, ["anything"])),
    (
        with_docstring,
        _object(
            {
                "city": {"type": "string", "description": 'The city to forecast, e.g. "Oslo".'},
                "days": {"type": "integer", "description": "How many days ahead.", "default": 1},
            },
            ["city"],
        ),
    ),
    (title_named, _object({"title": S}, ["title"])),
]


@pytest.mark.parametrize(("function", "expected"), SCHEMAS, ids=[f.__name__ for f, _ in SCHEMAS])
def test_schema_from_signature(function: Any, expected: dict[str, Any]) -> None:
    assert function_schema(function).parameters == expected


def test_self_and_cls_are_skipped() -> None:
    class Weather:
        def forecast(self, city: str) -> str:
            return city

    schema = function_schema(Weather.forecast)
    assert schema.skips_first
    assert schema.parameters["properties"] == {"city": S}


@pytest.mark.parametrize(
    "function",
    [lambda *cities: None, lambda **options: None],
    ids=["*args", "**kwargs"],
)
def test_variadic_parameters_are_rejected(function: Any) -> None:
    with pytest.raises(ConfigurationError, match="named parameters"):
        function_schema(function)


def test_unresolvable_annotations_are_a_configuration_error() -> None:
    def broken(x: NoSuchType) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(ConfigurationError, match="type hints of tool 'broken'"):
        function_schema(broken)


def test_description_precedence_field_then_annotated_then_docstring() -> None:
    def f(
        a: Annotated[int, Field(description="from Field")],
        b: Annotated[int, "from Annotated"],
        c: int,
    ) -> None:
        """Summary.

        Args:
            a: from docstring
            b: from docstring
            c: from docstring
        """

    properties = function_schema(f).parameters["properties"]
    assert [properties[p]["description"] for p in "abc"] == [
        "from Field",
        "from Annotated",
        "from docstring",
    ]


# -- docstrings -----------------------------------------------------------------------------

DOCSTRINGS = [
    (None, "", {}),
    ("Just a summary.", "Just a summary.", {}),
    (
        """Summary line.

        Second paragraph.

        Args:
            a: First.
            b (list[int]): Second,
                continued here.
            *rest: Variadic.

        Returns:
            Something.
        """,
        "Summary line.\n\nSecond paragraph.",
        {"a": "First.", "b": "Second, continued here.", "rest": "Variadic."},
    ),
    (
        """Summary.

        Parameters:
            x: An x.
        Raises:
            ValueError: never a parameter.
        """,
        "Summary.",
        {"x": "An x."},
    ),
    (
        """Sphinx style.

        :param city: The city.
        :param int days: Days ahead.
        :returns: text
        """,
        "Sphinx style.",
        {"city": "The city.", "days": "Days ahead."},
    ),
]


@pytest.mark.parametrize(("doc", "description", "params"), DOCSTRINGS)
def test_parse_docstring(doc: str | None, description: str, params: dict[str, str]) -> None:
    parsed = parse_docstring(doc)
    assert parsed.description == description
    assert dict(parsed.params) == params


# -- cleaning and models --------------------------------------------------------------------


def test_clean_schema_keeps_property_names_defaults_and_enums() -> None:
    schema = {
        "title": "Model",
        "type": "object",
        "properties": {"title": {"title": "Title", "type": "string", "default": "title"}},
        "$defs": {"X": {"title": "X", "enum": ["title"]}},
        "anyOf": [{"title": "A"}],
    }
    assert clean_schema(schema) == {
        "type": "object",
        "properties": {"title": {"type": "string", "default": "title"}},
        "$defs": {"X": {"enum": ["title"]}},
        "anyOf": [{}],
    }


def test_model_parameters_schema() -> None:
    assert model_parameters_schema(Address) == ADDRESS


# -- validation -----------------------------------------------------------------------------

SCALARS = function_schema(scalars).model
GOOD = '{"text": "a", "count": 1, "ratio": 0.5, "flag": true}'


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{not json", "not valid JSON (Expecting property name enclosed in double quotes"),
        ("[1, 2]", "expected a JSON object of named arguments, got an array"),
        ('"text"', "expected a JSON object of named arguments, got a string"),
        (
            '{"text": "a", "count": "many", "ratio": 0.5, "flag": true}',
            "count: Input should be a valid integer",
        ),
        ('{"text": "a", "ratio": 0.5, "flag": true}', "count: Field required"),
        (GOOD[:-1] + ', "extra": 1}', "extra: Extra inputs are not permitted"),
    ],
)
def test_invalid_arguments_name_the_problem(arguments: str, message: str) -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        validate_arguments(SCALARS, arguments, "scalars")
    assert str(caught.value).startswith("Invalid arguments for 'scalars': ")
    assert message in str(caught.value)


def test_every_bad_field_is_named_with_its_path() -> None:
    model = function_schema(nested).model
    with pytest.raises(ToolArgumentsError) as caught:
        validate_arguments(model, '{"person": {"name": 1, "address": {}}, "people": []}', "n")
    assert str(caught.value) == (
        "Invalid arguments for 'n': person.name: Input should be a valid string; "
        "person.address.street: Field required"
    )


def test_valid_arguments_and_empty_text() -> None:
    assert validate_arguments(SCALARS, GOOD, "scalars").model_dump(by_alias=True) == {
        "text": "a",
        "count": 1,
        "ratio": 0.5,
        "flag": True,
    }
    empty = function_schema(no_parameters).model
    validate_arguments(empty, "", "no_parameters")  # some models send "" for no arguments
    validate_arguments(empty, "  {} ", "no_parameters")


def test_call_arguments_keep_positional_only_and_keyword_parameters_apart() -> None:
    def f(a: int, /, b: int, *, c: int = 0) -> None: ...

    schema = function_schema(f)
    validated = validate_arguments(schema.model, '{"a": 1, "b": 2, "c": 3}', "f")
    assert schema.call_arguments(validated) == ([1], {"b": 2, "c": 3})


def test_parameter_names_that_clash_with_pydantic_work() -> None:
    def f(json: str, model_config: int, _private: bool = False) -> None: ...

    schema = function_schema(f)
    assert set(schema.parameters["properties"]) == {"json", "model_config", "_private"}
    validated = validate_arguments(schema.model, '{"json": "j", "model_config": 2}', "f")
    assert schema.call_arguments(validated) == (
        [],
        {"json": "j", "model_config": 2, "_private": False},
    )
