"""A ``{variable}`` written unquoted where YAML reads ``{`` as a mapping (the first crew file a
newcomer writes): the error names the line and says to quote the value, whichever way YAML
fails (a syntax error, or a mapping where text was expected)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentensemble.config import ConfigFileError, load_crew

HEAD = "model: openai/gpt-4o-mini\nagents:\n  writer: {role: Writer, goal: Write}\ntasks:\n"
QUOTE = 'must be quoted inside {...} or when it starts with the variable: description: "Write'
ROWS = [
    # (the task's line, the line of the error, what it says)
    ("  - {description: Write about {topic}, agent: writer}\n", 5, QUOTE),
    ("  t:\n    description: {topic} matters\n    agent: writer\n", 6, QUOTE),
    (
        "  t:\n    description: {topic}\n    agent: writer\n",
        6,
        'tasks.t.description: {topic} was read as a YAML mapping, not text: quote the value ("{',
    ),
]


@pytest.mark.parametrize(("task", "line", "says"), ROWS)
def test_an_unquoted_variable_is_told_to_be_quoted(
    tmp_path: Path, task: str, line: int, says: str
) -> None:
    crew = tmp_path / "crew.yaml"
    crew.write_text(HEAD + task)
    with pytest.raises(ConfigFileError) as caught:
        load_crew(crew)
    assert caught.value.line == line
    assert says in str(caught.value)


@pytest.mark.parametrize(
    "task",
    [
        '  - {description: "Write about {topic}", agent: writer}\n',
        "  t:\n    description: Write about {topic}\n    agent: writer\n",  # plain text: fine
    ],
)
def test_the_quoted_and_the_plain_forms_load(tmp_path: Path, task: str) -> None:
    crew = tmp_path / "crew.yaml"
    crew.write_text(HEAD + task)
    assert "{topic}" in load_crew(crew).tasks[0].description  # type: ignore[union-attr]


def test_a_yaml_error_without_a_variable_gets_no_such_hint(tmp_path: Path) -> None:
    crew = tmp_path / "crew.yaml"
    crew.write_text(HEAD + "  t:\n    description: [a\n")
    with pytest.raises(ConfigFileError) as caught:
        load_crew(crew)
    assert "not valid YAML" in str(caught.value) and "quoted" not in str(caught.value)
