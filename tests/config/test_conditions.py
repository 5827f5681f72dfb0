"""Crew-file conditions: a small safe syntax, parsed once, never eval'd."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble import GraphState, LoopState, TaskOutput
from agentensemble.config.conditions import ConditionError, edge_condition, loop_condition


class Review(BaseModel):
    approved: bool
    score: int
    notes: dict[str, str] = {}


def out(raw: str, parsed: Any = None) -> TaskOutput:
    return TaskOutput(raw=raw, parsed=parsed, task_description="t", agent_role="r")


REVIEW = out("LGTM overall", Review(approved=True, score=7, notes={"tone": "dry"}))
DRAFT = out("a draft with NEEDS MORE in it")
STATE = LoopState(iteration=2, outputs={"critique": REVIEW, "draft": DRAFT}, last=REVIEW)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("critique.approved == true", True),
        ("critique.approved", True),
        ("critique.approved == false", False),
        ("critique.score >= 8", False),
        ("critique.score > 6 and critique.approved", True),
        ("critique.score > 9 or iteration >= 2", True),
        ("critique.notes.tone == 'dry'", True),
        ('draft contains "NEEDS MORE"', True),
        ("draft not contains 'NEEDS MORE'", False),
        ("last contains 'LGTM'", True),
        ("iteration == 2", True),
        ("critique.score != 7 or draft contains 'x' and iteration < 1", False),
        ("draft contains 'it\\'s'", False),
    ],
)
def test_loop_conditions(text: str, expected: bool) -> None:
    assert loop_condition(text, ["critique", "draft"])(STATE) is expected


def test_edge_conditions_read_the_state_that_ran_and_the_step() -> None:
    state = GraphState(step=3, state="answer", output=DRAFT, outputs={"answer": DRAFT}, path=[])
    assert edge_condition("output contains 'NEEDS MORE' and step < 5", ["answer"])(state)
    assert not edge_condition("answer not contains 'NEEDS'", ["answer"])(state)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("critic.approved == true", "unknown name 'critic'"),
        ("critique.approved = true", "cannot read"),
        ("critique contains LGTM", "contains takes a quoted text"),
        ("critique.score >= ", "ends too early"),
        ("critique.score >= banana", "expected a value"),
        ("__import__('os').system('x')", "cannot read"),
        ("iteration.count == 1", "is a number"),
        ("critique.approved == true true", "unexpected 'true'"),
        ("x" * 600, "at most 500"),
    ],
)
def test_bad_conditions_are_refused_when_parsed(text: str, words: str) -> None:
    with pytest.raises(ConditionError, match=words):
        loop_condition(text, ["critique", "draft"])


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("critique.missing == 1", "has no field 'missing'"),
        ("draft.approved", "has no field 'approved' \\(is the step's output_type set\\?\\)"),
        ("critique.score > 'high'", "cannot compare"),
    ],
)
def test_a_condition_that_cannot_be_evaluated_raises_naming_why(text: str, words: str) -> None:
    with pytest.raises(ConditionError, match=words):
        loop_condition(text, ["critique", "draft"])(STATE)
