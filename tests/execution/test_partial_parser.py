"""``PartialParser``: the validated fields so far of a typed answer whose JSON is still coming
in, table-driven, and hostile answers (a giant number, deep nesting, a long text) that must
neither crash nor take quadratic time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from agentensemble.execution.structured import PartialParser


class Item(BaseModel):
    name: str
    price: float


class Order(BaseModel):
    customer: str = Field(alias="Customer")
    status: Literal["open", "closed"]
    count: int = Field(gt=0)
    items: list[Item]


class Point(TypedDict):
    x: int
    y: int


@dataclass
class Label:
    text: str


def fed(output_type: Any, pieces: list[str]) -> list[Any]:
    """Each piece fed as it streams in, then the stream's end (``flush``)."""
    parser = PartialParser(output_type)
    shown = [*map(parser.feed, pieces), parser.flush()]
    return [partial for partial in shown if partial is not None]


@pytest.mark.parametrize(
    ("output_type", "pieces", "expected"),
    [
        pytest.param(
            Order,
            ['{"Customer": "Ad', 'a", "sta', 'tus": "clo', 'sed", "count": 1', "2, "],
            [
                {"customer": "Ad"},
                {"customer": "Ada"},
                {"customer": "Ada", "status": "closed"},
                {"customer": "Ada", "status": "closed", "count": 12},
            ],
            id="an alias; a Literal once whole; a number once it ended",
        ),
        pytest.param(
            Order,
            ['{"count": 0, ', '"items": [{"name": "tea", "pri', 'ce": 2.5}, {"na', 'me": "x"}]'],
            [{"items": []}, {"items": [Item(name="tea", price=2.5)]}],
            id="a broken constraint and a half item left out",
        ),
        pytest.param(
            Order,
            ["Sure! Here it is:\n```json\n", '{"Customer": "Bo"}', "\n```"],
            [{"customer": "Bo"}],
            id="prose and a fence before the JSON",
        ),
        pytest.param(
            Point, ['{"x": 3, ', '"y": "no"}'], [{"x": 3}], id="a TypedDict, a wrong value out"
        ),
        pytest.param(
            Label, ['{"text": "he', 'llo"}'], [{"text": "he"}, {"text": "hello"}], id="a dataclass"
        ),
        pytest.param(
            list[Item],
            ['[{"name": "a", "price": 1}, ', '{"name": "b", "price": 2}]'],
            [[Item(name="a", price=1)], [Item(name="a", price=1), Item(name="b", price=2)]],
            id="a list, item by item",
        ),
        pytest.param(
            list[Item],
            ['{"result": [{"name": "a", "price": 1}', "]}"],
            [[Item(name="a", price=1)]],
            id="a list wrapped as result",
        ),
        pytest.param(Order, ["no JSON at all, just words"], [], id="prose only"),
        pytest.param(
            Order,
            ['{"Customer": "Ada"}', " and then [ some } prose"],
            [{"customer": "Ada"}],
            id="prose after the JSON",
        ),
    ],
)
def test_partials(output_type: Any, pieces: list[str], expected: list[Any]) -> None:
    assert fed(output_type, pieces) == expected


@pytest.mark.parametrize("output_type", [int, str, bool, Literal["a", "b"]])
def test_scalars_have_no_partials(output_type: Any) -> None:
    assert PartialParser(output_type).streams is False


def test_the_end_of_the_stream_shows_what_came_between_two_parses() -> None:
    parser = PartialParser(Label)
    assert parser.feed('{"text": "' + "x" * 100) == {"text": "x" * 100}
    assert parser.feed("y") is None  # grew by less than a 32nd: not parsed yet
    assert parser.flush() == {"text": "x" * 100 + "y"}
    assert parser.flush() is None  # nothing new since


def test_restart_forgets_the_text_so_far() -> None:
    parser = PartialParser(Label)
    assert parser.feed('{"text": "first') == {"text": "first"}
    parser.restart()
    assert parser.feed('{"text": "sec') == {"text": "sec"}


def test_hostile_answers_give_no_partial_and_no_crash() -> None:
    # a 100,000-digit number: Python refuses to convert it; once took minutes in a regex
    assert fed(Order, ['{"count": ' + "9" * 100_000 + ", "]) == []
    # nesting far past any parser's recursion limit
    assert fed(list[Any], ["[" * 5_000]) == []


def test_a_long_text_is_reparsed_a_bounded_number_of_times() -> None:
    shown = fed(Label, ['{"text": "', *(["word "] * 50_000), '"}'])

    assert shown[-1] == {"text": "word " * 50_000}
    assert len(shown) < 400  # re-parsed as the text grows by a 32nd, not at every piece
