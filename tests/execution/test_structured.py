"""Parsing typed answers: tolerant of code fences and prose, strict on the schema."""

import pytest
from pydantic import BaseModel

from agentensemble import OutputParsingError
from agentensemble.execution.structured import output_instructions, parse_output


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
