"""``parse_yaml``: YAML from outside (a skill's front matter) parsed into plain values, bounded
in size, values and depth, with no object construction; every failure a ``YamlInputError``
naming the line."""

from __future__ import annotations

from typing import Any

import pytest

from agentensemble.untrusted import YamlInputError, YamlPath, parse_yaml


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("a: 1\nb: [x, {c: true}]\n", {"a": 1, "b": ["x", {"c": True}]}),
        ("- 1\n- two\n", [1, "two"]),
        ("plain text", "plain text"),
        ("x: &a [1, 2]\ny: *a\n", {"x": [1, 2], "y": [1, 2]}),
        ("3: three\n", {"3": "three"}),
    ],
)
def test_plain_yaml_becomes_plain_values(text: str, expected: Any) -> None:
    assert parse_yaml(text) == expected


def test_the_line_of_every_key_is_recorded() -> None:
    lines: dict[YamlPath, int] = {}
    parse_yaml("name: a\nmeta:\n  author: b\nlist:\n  - x\n  - y\n", lines=lines)
    assert lines == {
        (): 1,
        ("name",): 1,
        ("meta",): 2,
        ("meta", "author"): 3,
        ("list",): 4,
        ("list", 0): 5,
        ("list", 1): 6,
    }


LAUGHS = "a: &a [" + ", ".join(["lol"] * 100) + "]\nb: &b [" + ", ".join(["*a"] * 100) + "]\n"
LAUGHS += "c: [" + ", ".join(["*b"] * 100) + "]\n"


@pytest.mark.parametrize(
    ("text", "settings", "reason", "line"),
    [
        ("a: [1, 2\n", {}, "not valid YAML", 2),
        ("a: 1\na: 2\n", {}, "not usable (the key 'a' appears twice)", 2),
        ("? [1, 2]\n: x\n", {}, "not usable (a key must be text)", 1),
        ("a: !!python/object/apply:os.system [echo hi]\n", {}, "is not allowed", 1),
        ("a: !!python/name:os.system ''\n", {}, "not usable (could not determine", 1),
        ("a: !custom x\n", {}, "not usable (could not determine", 1),
        ("a: " + "9" * 5000 + "\n", {}, "a number too long to read", 1),
        # hex, octal and binary integers of any length are read, but could never be shown
        ("a: 1\nb: 0x" + "f" * 5000 + "\n", {}, "a number too long to read", 2),
        ("a: 0" + "7" * 6000 + "\n", {}, "a number too long to read", 1),
        ("a: -0b" + "1" * 20_000 + "\n", {}, "a number too long to read", 1),
        ("? 0x" + "f" * 5000 + "\n: v\n", {}, "a number too long to read", 1),
        (LAUGHS, {}, "too large (over 10000 values)", 3),
        ("a: &a [*a]\n", {}, "", None),
        ("x" * 101, {"max_chars": 100}, "too large (101 characters; at most 100", None),
        ("a: [[[1]]]\n", {"max_depth": 3}, "nested too deeply (more than 3 levels", 1),
        ("[" * 20_000 + "]" * 20_000, {}, "nested too deeply", None),
    ],
)
def test_hostile_yaml_is_one_error_naming_the_line(
    text: str, settings: dict[str, Any], reason: str, line: int | None
) -> None:
    with pytest.raises(YamlInputError) as caught:
        parse_yaml(text, what="the front matter", **settings)
    error = caught.value
    assert str(error).startswith("the front matter is ")
    assert reason in error.problem
    if line is not None:
        assert error.line == line
        assert str(error).endswith(f"(line {line})")
