"""Typed output end to end on scripted models: native response_format or prompt instructions,
a bounded number of corrections, scalars and lists, and typed access to the parsed value."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ValidationError

from agentensemble import Agent, Ensemble, OutputParsingError, Task, TaskExecutionError
from agentensemble.testing import ScriptedChatModel


class Item(BaseModel):
    name: str
    price: float


class Report(BaseModel):
    title: str
    score: int


def run_typed(model: ScriptedChatModel, output_type: Any, **task_options: Any) -> Any:
    agent = Agent(role="Analyst", goal="Answer precisely", llm=model)
    task = Task(description="List the items", agent=agent, output_type=output_type, **task_options)
    return Ensemble(tasks=[task]).run()


def test_native_structured_output_sends_the_schema_as_response_format() -> None:
    model = ScriptedChatModel(['{"title": "T", "score": 3}'], native_structured_output=True)
    output = run_typed(model, Report)

    assert output.parsed == Report(title="T", score=3)
    (request,) = model.requests
    assert request.response_format is not None
    assert request.response_format.to_openai()["json_schema"]["name"] == "Report"
    assert "## Output Format" not in request.last_user_content  # no schema in the prompt


def test_without_native_support_the_schema_goes_into_the_prompt() -> None:
    model = ScriptedChatModel(['{"title": "T", "score": 3}'])
    output = run_typed(model, Report)

    assert output.parsed == Report(title="T", score=3)
    (request,) = model.requests
    assert request.response_format is None
    assert "## Output Format" in request.last_user_content
    assert '"score"' in request.last_user_content


@pytest.mark.parametrize("retries", [0, 1, 3])
def test_max_output_retries_bounds_the_corrections(retries: int) -> None:
    model = ScriptedChatModel(["not json"] * (retries + 1))
    with pytest.raises(TaskExecutionError) as info:
        run_typed(model, Report, max_output_retries=retries)

    assert isinstance(info.value.__cause__, OutputParsingError)
    assert len(model.requests) == retries + 1
    model.assert_all_consumed()
    if retries:
        assert "could not be used" in model.requests[-1].last_user_content


def test_a_correction_turn_fixes_the_answer_within_the_default_bound() -> None:
    model = ScriptedChatModel(["oops", '{"title": "x"}', '{"title": "T", "score": 1}'])
    output = run_typed(model, Report)  # default: two corrections

    assert output.parsed == Report(title="T", score=1)
    assert output.task_outputs[0].llm_calls == 3


def test_negative_retries_are_refused_at_construction() -> None:
    with pytest.raises(ValidationError, match="max_output_retries"):
        Task(description="x", max_output_retries=-1)


@pytest.mark.parametrize(
    ("output_type", "answer", "expected"),
    [
        (list[Item], '[{"name": "tea", "price": 2.5}]', [Item(name="tea", price=2.5)]),
        (int, "42", 42),
        (Literal["approve", "reject"], "reject", "reject"),
        (str, "plain words", "plain words"),
    ],
)
def test_scalars_and_lists_are_output_types(output_type: Any, answer: str, expected: Any) -> None:
    output = run_typed(ScriptedChatModel([answer]), output_type)
    assert output.parsed == expected
    assert output.task_outputs[0].parsed == expected


def test_native_list_output_is_wrapped_in_an_object_and_unwrapped() -> None:
    model = ScriptedChatModel(
        ['{"result": [{"name": "tea", "price": 2.5}]}'], native_structured_output=True
    )
    output = run_typed(model, list[Item])

    assert output.parsed == [Item(name="tea", price=2.5)]
    schema = model.requests[0].response_format.schema  # type: ignore[union-attr]
    assert schema["required"] == ["result"]


def test_ensemble_parsed_is_the_last_task_parsed_value() -> None:
    model = ScriptedChatModel(["free text", '{"title": "T", "score": 9}'])
    first = Task(description="Draft", agent=Agent(role="A", goal="g", llm=model))
    second = Task(
        description="Score it", agent=Agent(role="B", goal="g", llm=model), output_type=Report
    )
    output = Ensemble(tasks=[first, second]).run()

    assert output.task_outputs[0].parsed is None
    assert output.parsed == Report(title="T", score=9)


def test_parsed_as_gives_the_precise_type_or_a_type_error() -> None:
    output = run_typed(ScriptedChatModel(['[{"name": "tea", "price": 1}]']), list[Item])

    items = output.parsed_as(list[Item])
    assert items[0].name == "tea"
    assert output.task_outputs[0].parsed_as(list[Item]) == items
    with pytest.raises(TypeError, match="is not a"):
        output.parsed_as(Report)


def test_an_output_type_without_a_schema_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match=r"output_type .* cannot be used"):
        Task(description="x", output_type=object())


def test_a_rate_limited_model_keeps_its_native_structured_output() -> None:
    from agentensemble import RateLimit, RateLimitedModel

    inner = ScriptedChatModel(['{"title": "T", "score": 1}'], native_structured_output=True)
    output = run_typed(RateLimitedModel(inner, RateLimit(requests_per_minute=600)), Report)

    assert output.parsed == Report(title="T", score=1)
    assert inner.requests[0].response_format is not None
