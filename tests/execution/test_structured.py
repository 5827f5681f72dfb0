"""Parsing typed answers: tolerant of code fences and prose, strict on the schema."""

import re
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from agentensemble import OutputParsingError
from agentensemble.execution.structured import (
    output_instructions,
    output_spec,
    parse_output,
    response_format,
)


class Report(BaseModel):
    title: str
    score: int


@pytest.mark.parametrize(
    "text",
    [
        '{"title": "A", "score": 3}',
        '```json\n{"title": "A", "score": 3}\n```',
        'Here it is:\n{"title": "A", "score": 3}\nThanks.',
        '```\n{"title": "A", "score": 3}```',
    ],
)
def test_parses_json_answers(text: str) -> None:
    assert parse_output(text, Report) == Report(title="A", score=3)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"title": "A"}', "score"),
        ('{"title": "A", "score": "high"}', "score"),
        ("not json at all", "(root)"),
    ],
)
def test_errors_name_the_problem(text: str, named: str) -> None:
    with pytest.raises(OutputParsingError) as info:
        parse_output(text, Report)
    assert named in str(info.value)
    assert info.value.raw == text


def test_instructions_carry_the_schema() -> None:
    instructions = output_instructions(Report)
    assert instructions.startswith("## Output Format")
    assert '"score"' in instructions and '"title"' in instructions


# -- any type pydantic validates: scalars, lists, literals ------------------------------------


class Item(BaseModel):
    name: str


@pytest.mark.parametrize(
    ("output_type", "text", "expected"),
    [
        (list[Item], '[{"name": "a"}, {"name": "b"}]', [Item(name="a"), Item(name="b")]),
        (list[Item], '{"result": [{"name": "a"}]}', [Item(name="a")]),
        (list[Item], 'Sure:\n```json\n[{"name": "a"}]\n```', [Item(name="a")]),
        (int, "42", 42),
        (int, '{"result": 7}', 7),
        (float, " 2.5 ", 2.5),
        (bool, "true", True),
        (str, "just some prose", "just some prose"),
        (str, '{"result": "wrapped"}', "wrapped"),
        (Literal["yes", "no"], "yes", "yes"),
        (Literal["yes", "no"], '"no"', "no"),
        (dict[str, int], '{"a": 1, "b": 2}', {"a": 1, "b": 2}),
    ],
)
def test_parses_scalars_lists_and_literals(output_type: Any, text: str, expected: Any) -> None:
    assert parse_output(text, output_type) == expected


@pytest.mark.parametrize(
    ("output_type", "text", "named"),
    [
        (Literal["yes", "no"], "maybe", "Literal['yes', 'no']"),
        (int, "many", "int"),
        (list[Item], '[{"nome": "a"}]', "list[Item]"),
    ],
)
def test_scalar_errors_name_the_type(output_type: Any, text: str, named: str) -> None:
    with pytest.raises(OutputParsingError, match=re.escape(f"does not match {named}")):
        parse_output(text, output_type)


@pytest.mark.parametrize(
    ("output_type", "wrapped"),
    [(Report, False), (list[Item], True), (int, True), (Literal["a"], True)],
)
def test_schema_is_an_object_at_the_root(output_type: Any, wrapped: bool) -> None:
    spec = output_spec(output_type)
    assert spec.schema["type"] == "object"
    assert spec.wrapped is wrapped
    if wrapped:
        assert spec.schema["required"] == ["result"]


def test_wrapped_list_keeps_its_definitions_at_the_root() -> None:
    schema = output_spec(list[Item]).schema
    assert schema["properties"]["result"]["items"] == {"$ref": "#/$defs/Item"}
    assert "Item" in schema["$defs"]


def test_response_format_is_the_openai_json_schema_request() -> None:
    request = response_format(list[Item]).to_openai()
    assert request["type"] == "json_schema"
    assert request["json_schema"]["name"] == "list_Item"
    assert request["json_schema"]["schema"] == output_spec(list[Item]).schema
