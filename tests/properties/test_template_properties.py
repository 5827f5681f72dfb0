"""Template filling, checked on generated templates against a reference built part by part.

A template is generated as a list of parts: plain text (no braces), variables ``{name}``,
escapes ``{{`` / ``}}`` and other brace text that is no variable (``{"a": 1}``, ``{1st}``).
The reference output is each part's meaning, concatenated; ``fill_template`` must agree, whatever
the values hold (braces, ``{other_variable}``, unicode): values are inserted, never re-templated.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from agentensemble import Agent, Ensemble, PromptTemplateError, Task
from agentensemble.templates import fill_template, missing_variables, template_variables
from agentensemble.testing import ScriptedChatModel

SETTINGS = settings(max_examples=200, deadline=None)


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Escape:
    brace: str  # "{" or "}", written doubled


@dataclass(frozen=True)
class Other:
    text: str  # brace text that names no variable: left exactly as written


Part = Text | Var | Escape | Other

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name)
)
plain_text = st.text(st.characters(blacklist_characters="{}", codec="utf-8"), max_size=20)
other_braces = st.sampled_from(
    ['{"a": 1}', "{ spaced }", "{1st}", "{}", "{-}", "{café}", "{a.b}", "{ }", "{x y}", "{ü}"]
)
parts = st.lists(
    st.one_of(
        plain_text.map(Text),
        names.map(Var),
        st.sampled_from(["{", "}"]).map(Escape),
        other_braces.map(Other),
    ),
    max_size=12,
)
values = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["{x}", "{{", "}}", "{topic}", "{{topic}}", "}{", "{"]),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
)


def render(template: list[Part]) -> str:
    """The template text as a user would write it."""
    out = []
    for part in template:
        if isinstance(part, Text):
            out.append(part.text)
        elif isinstance(part, Var):
            out.append("{" + part.name + "}")
        elif isinstance(part, Escape):
            out.append(part.brace * 2)
        else:
            out.append(part.text)
    return "".join(out)


def reference(template: list[Part], inputs: dict[str, Any]) -> str:
    """What the template means, part by part."""
    out = []
    for part in template:
        if isinstance(part, Text):
            out.append(part.text)
        elif isinstance(part, Var):
            out.append(str(inputs[part.name]))
        elif isinstance(part, Escape):
            out.append(part.brace)
        else:
            out.append(part.text)
    return "".join(out)


def variables(template: list[Part]) -> list[str]:
    return list(dict.fromkeys(p.name for p in template if isinstance(p, Var)))


@SETTINGS
@given(template=parts, data=st.data())
@example(template=[Escape("{"), Var("x"), Escape("}")], data=None)  # "{{{x}}}" -> "{value}"
def test_filling_agrees_with_the_part_by_part_reference(
    template: list[Part], data: st.DataObject | None
) -> None:
    needed = variables(template)
    if data is None:
        inputs: dict[str, Any] = dict.fromkeys(needed, "{x}")
    else:
        inputs = {name: data.draw(values, label=name) for name in needed}
        inputs.update(data.draw(st.dictionaries(names, values, max_size=3), label="unused"))
    text = render(template)

    assert template_variables(text) == needed
    assert fill_template(text, inputs) == reference(template, inputs)


@SETTINGS
@given(template=parts, value=st.sampled_from(["{a}", "{{a}}", "{b} and {a}", "}}{{"]))
def test_values_are_never_templated_again(template: list[Part], value: str) -> None:
    # every variable's value mentions another variable that does have a value
    inputs = {name: value for name in variables(template)} | {"a": "A", "b": "B"}
    filled = fill_template(render(template), inputs)
    assert filled == reference(template, inputs)
    if any(isinstance(p, Var) and p.name not in ("a", "b") for p in template):
        assert value in filled  # inserted verbatim: "{a}" stays "{a}", not "A"


@SETTINGS
@given(text=plain_text, inputs=st.dictionaries(names, values, max_size=4))
def test_text_without_braces_is_unchanged(text: str, inputs: dict[str, Any]) -> None:
    assert fill_template(text, inputs) == text


@SETTINGS
@given(template=parts, data=st.data())
def test_every_missing_variable_is_reported_in_one_error(
    template: list[Part], data: st.DataObject
) -> None:
    needed = variables(template)
    given_names = data.draw(
        st.lists(st.sampled_from(needed), unique=True) if needed else st.just([])
    )
    inputs = dict.fromkeys(given_names, "value")
    missing = sorted(set(needed) - set(given_names))

    assert missing_variables([render(template)], inputs) == missing
    if missing:
        with pytest.raises(PromptTemplateError) as info:
            fill_template(render(template), inputs)
        assert info.value.missing == missing
        for name in missing:
            assert f"'{{{name}}}'" in str(info.value)
    else:
        fill_template(render(template), inputs)


@settings(max_examples=40, deadline=None)
@given(
    role=parts,
    goal=parts,
    description=parts,
    expected=parts,
    provided=st.dictionaries(names, values, max_size=4),
)
def test_an_ensemble_reports_all_missing_variables_before_any_model_call(
    role: list[Part],
    goal: list[Part],
    description: list[Part],
    expected: list[Part],
    provided: dict[str, Any],
) -> None:
    texts = [render(p) for p in (role, goal, description, expected)]
    assume(all(t.strip() for t in texts))  # blank texts are rejected when the model is built
    used = {v for p in (role, goal, description, expected) for v in variables(p)}
    missing = sorted(used - set(provided))
    model = ScriptedChatModel(["the answer"])
    agent = Agent(role=texts[0], goal=texts[1], llm=model)
    ensemble = Ensemble(tasks=[Task(description=texts[2], expected_output=texts[3], agent=agent)])

    if missing:
        with pytest.raises(PromptTemplateError) as info:
            ensemble.run(provided)
        assert info.value.missing == missing
        assert model.requests == []
    else:
        result = ensemble.run(provided)
        assert result.raw == "the answer"
        prompt = model.requests[0].messages
        assert reference(description, provided) in prompt[1]["content"]
        assert reference(role, provided) in prompt[0]["content"]
