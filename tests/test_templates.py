"""Template filling rules, table-driven."""

import pytest

from agentensemble import PromptTemplateError
from agentensemble.templates import fill_template, missing_variables, template_variables


@pytest.mark.parametrize(
    ("text", "inputs", "expected"),
    [
        ("Research {topic}", {"topic": "AI"}, "Research AI"),
        ("{a} and {b}", {"a": 1, "b": 2.5}, "1 and 2.5"),
        ("{{literal}} braces", {}, "{literal} braces"),
        ("{{{topic}}}", {"topic": "x"}, "{x}"),
        ("}} and {{", {}, "} and {"),
        ('JSON like {"key": 1} is left alone', {}, 'JSON like {"key": 1} is left alone'),
        ("{ spaced } is not a variable", {}, "{ spaced } is not a variable"),
        (
            "value {v} is never re-templated",
            {"v": "{other}"},
            "value {other} is never re-templated",
        ),
        ("unicode {名}", {}, "unicode {名}"),
        ("{x}{x}", {"x": "é"}, "éé"),
        ("no variables", {"unused": 1}, "no variables"),
    ],
)
def test_fill_template(text: str, inputs: dict[str, object], expected: str) -> None:
    assert fill_template(text, inputs) == expected


def test_every_missing_variable_is_reported_at_once() -> None:
    with pytest.raises(PromptTemplateError) as info:
        fill_template("{topic} for {audience} in {year}", {"topic": "AI"})
    assert info.value.missing == ["audience", "year"]
    assert "'{audience}'" in str(info.value) and "'{year}'" in str(info.value)


def test_variables_in_order_of_first_use() -> None:
    assert template_variables("{b} {a} {b} {{c}}") == ["b", "a"]


def test_missing_across_texts() -> None:
    assert missing_variables(["{a}", "{b} {c}"], {"b": 1}) == ["a", "c"]
