"""``PartialOutput``: a typed task's answer as it forms, in ``Ensemble.astream`` (offline, on
the scripted models, which stream their text word by word)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, Field

from agentensemble import (
    Agent,
    Ensemble,
    LLMCallStarted,
    PartialOutput,
    Task,
    TaskCompleted,
    TokenDelta,
)
from agentensemble.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio


class Item(BaseModel):
    name: str
    price: float


class Report(BaseModel):
    title: str
    score: int = Field(gt=0)
    items: list[Item]


ANSWER = (
    '{"title": "Quarterly review", "score": 8, '
    '"items": [{"name": "tea", "price": 2.5}, {"name": "cake", "price": 4}]}'
)


async def stream(answers: list[str], output_type: Any, *, native: bool = False) -> list[Any]:
    model = ScriptedChatModel(answers, native_structured_output=native)
    agent = Agent(role="Analyst", goal="Rate the quarter", llm=model)
    task = Task(description="Rate it", agent=agent, output_type=output_type, name="rate")
    return [event async for event in Ensemble(tasks=[task]).astream()]


def partials(events: list[Any]) -> list[Any]:
    return [e.partial for e in events if isinstance(e, PartialOutput)]


@pytest.mark.parametrize("native", [True, False], ids=["json-mode", "prompt"])
async def test_the_fields_so_far_arrive_as_they_form_then_the_final_output(native: bool) -> None:
    events = await stream([ANSWER], Report, native=native)

    seen = partials(events)
    assert seen[0] == {"title": "Quarterly"}  # a text field grows word by word
    assert {"title": "Quarterly review", "score": 8} in seen
    assert {"title": "Quarterly review", "score": 8, "items": [Item(name="tea", price=2.5)]} in seen
    assert seen[-1] == {
        "title": "Quarterly review",
        "score": 8,
        "items": [Item(name="tea", price=2.5), Item(name="cake", price=4)],
    }
    assert all(one != two for one, two in itertools.pairwise(seen))  # only changes
    final = next(e for e in events if isinstance(e, TaskCompleted)).output.parsed
    assert final == Report(title="Quarterly review", score=8, items=seen[-1]["items"])
    kinds = [type(e) for e in events]
    assert kinds.index(PartialOutput) < kinds.index(TaskCompleted)
    first = next(e for e in events if isinstance(e, PartialOutput))
    call = next(e for e in events if isinstance(e, LLMCallStarted))
    assert (first.run_id, first.task_name, first.agent_role, first.call_id) == (
        events[-1].output.run_id,
        "rate",
        "Analyst",
        call.call_id,
    )


async def test_missing_required_fields_and_a_value_not_yet_valid_are_left_out() -> None:
    # "score": 0 breaks its constraint (gt=0): it is never shown; the run corrects it after
    answers = ['{"title": "Draft", "score": 0, "items": []}', ANSWER]
    events = await stream(answers, Report)

    calls = [e.call_id for e in events if isinstance(e, LLMCallStarted)]
    first = [e.partial for e in events if isinstance(e, PartialOutput) and e.call_id == calls[0]]
    assert first[-1] == {"title": "Draft", "items": []}
    assert all("score" not in partial for partial in first)
    second = [e.partial for e in events if isinstance(e, PartialOutput) and e.call_id == calls[1]]
    assert second[0] == {"title": "Quarterly"}  # each model call starts over
    assert second[-1]["score"] == 8


async def test_prose_and_a_fence_around_the_json_are_skipped() -> None:
    answer = 'Here is the report:\n```json\n{"title": "Q3", "score": 7, "items": []}\n```'
    events = await stream([answer], Report)

    assert partials(events)[-1] == {"title": "Q3", "score": 7, "items": []}
    assert next(e for e in events if isinstance(e, TaskCompleted)).output.parsed == Report(
        title="Q3", score=7, items=[]
    )


@dataclass
class Point:
    x: int
    label: str


@pytest.mark.parametrize(
    ("shape", "answer", "last"),
    [
        ("list", '[{"name": "tea", "price": 2.5}, {"name": "cake", "price": 4}]', 2),
        ("wrapped list", '{"result": [{"name": "tea", "price": 2.5}]}', 1),
    ],
)
async def test_a_list_arrives_item_by_item(shape: str, answer: str, last: int) -> None:
    events = await stream([answer], list[Item])

    seen = partials(events)
    assert all(isinstance(partial, list) for partial in seen)
    assert [len(partial) for partial in seen] == list(range(1, last + 1))


async def test_a_dataclass_partial_is_a_dict_of_its_fields() -> None:
    events = await stream(['{"x": 3, "label": "north pole"}'], Point)

    assert partials(events)[-1] == {"x": 3, "label": "north pole"}
    assert next(e for e in events if isinstance(e, TaskCompleted)).output.parsed == Point(
        3, "north pole"
    )


@pytest.mark.parametrize("output_type", [int, str, bool])
async def test_a_scalar_has_no_partials_only_its_final_value(output_type: Any) -> None:
    answer = {int: "42", str: "forty two", bool: "true"}[output_type]
    events = await stream([answer], output_type)

    assert partials(events) == []
    assert any(isinstance(e, TokenDelta) for e in events)  # its text still streams


async def test_a_task_without_output_type_and_a_plain_run_get_no_partials() -> None:
    assert partials(await stream([ANSWER], None)) == []

    seen: list[Any] = []

    class Listener:
        def on_event(self, event: Any) -> None:
            seen.append(event)

    model = ScriptedChatModel([ANSWER])
    task = Task(description="Rate", agent=Agent(role="A", goal="G", llm=model), output_type=Report)
    await Ensemble(tasks=[task], listeners=[Listener()]).arun()
    assert seen and not any(isinstance(e, PartialOutput) for e in seen)
