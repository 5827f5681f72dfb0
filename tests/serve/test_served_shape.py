"""How a served ensemble looks from outside: inputs, description, arguments, typed results."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agentensemble import Agent, Ensemble, Task
from agentensemble.errors import ConfigurationError
from agentensemble.logging import register_secret
from agentensemble.serve._shape import (
    MAX_ARGUMENT_CHARS,
    BadArguments,
    check_arguments,
    check_name,
    description,
    error_text,
    input_schema,
    input_variables,
    output_schema,
    tool_name_for_file,
)
from agentensemble.testing import ScriptedChatModel


class Brief(BaseModel):
    headline: str


def crew(output_type: object = None) -> Ensemble:
    llm = ScriptedChatModel([])
    writer = Agent(role="Writer for {audience}", goal="Explain {topic}", llm=llm)
    return Ensemble(
        tasks=[
            Task(description="Research {topic}", expected_output="Facts", agent=writer),
            Task(
                description="Write about {topic} for {audience}",
                expected_output="A short article",
                agent=writer,
                output_type=output_type,
            ),
        ]
    )


def test_the_template_variables_are_required_described_strings() -> None:
    schema = input_schema(crew())
    assert input_variables(crew()) == ["topic", "audience"]
    assert schema["required"] == ["topic", "audience"]
    assert schema["additionalProperties"] is False
    topic = schema["properties"]["topic"]
    assert topic["type"] == "string"
    assert "fills {topic} in task 'Research {topic}'" in topic["description"]
    assert topic["maxLength"] == MAX_ARGUMENT_CHARS


def test_the_description_lists_the_tasks_and_what_comes_back() -> None:
    text = description(crew())
    assert "1. Research {topic} (Writer for {audience})" in text
    assert text.endswith("Returns: A short article")


@pytest.mark.parametrize(
    ("output_type", "schema_keys"),
    [(None, None), (Brief, {"headline"}), (list[int], {"result"}), (int, {"result"})],
)
def test_a_typed_last_task_gives_an_object_output_schema(
    output_type: object, schema_keys: set[str] | None
) -> None:
    schema = output_schema(crew(output_type))
    if schema_keys is None:
        assert schema is None
    else:
        assert schema is not None and schema["type"] == "object"
        assert set(schema["properties"]) == schema_keys


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "missing argument(s): topic, audience"),
        ({"topic": "AI"}, "missing argument(s): audience"),
        ({"topic": "AI", "audience": 3}, "argument 'audience' must be a string, got int"),
        ({"topic": "AI", "audience": "x", "tpoic": "y"}, "unknown argument(s): 'tpoic'"),
        ({"topic": "x" * (MAX_ARGUMENT_CHARS + 1), "audience": "y"}, "the limit is"),
    ],
)
def test_bad_arguments_are_named(arguments: dict[str, object], problem: str) -> None:
    with pytest.raises(BadArguments, match=None) as caught:
        check_arguments(["topic", "audience"], arguments)
    assert problem in str(caught.value)


def test_good_arguments_pass_through() -> None:
    assert check_arguments(["topic"], {"topic": "AI"}) == {"topic": "AI"}


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "semi;colon"])
def test_tool_names_are_checked(name: str) -> None:
    with pytest.raises(ConfigurationError, match="tool name"):
        check_name(name)


@pytest.mark.parametrize(
    ("stem", "name"), [("crew", "crew"), ("my crew", "my_crew"), ("a/b", "a_b"), ("", "crew")]
)
def test_a_file_stem_becomes_a_tool_name(stem: str, name: str) -> None:
    assert tool_name_for_file(stem) == name


def test_error_text_is_redacted_and_bounded() -> None:
    register_secret("hunter2-very-secret")
    text = error_text(RuntimeError("key hunter2-very-secret and sk-abcdefghijklmnop " + "x" * 9000))
    assert "hunter2-very-secret" not in text and "sk-abcdefghijklmnop" not in text
    assert len(text) <= 4000 and text.endswith("(truncated)")
