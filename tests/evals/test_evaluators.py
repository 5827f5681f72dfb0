"""The built-in evaluators, one table of (evaluator, run, verdict) each, on real run outputs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble.evals import (
    Case,
    Contains,
    Equals,
    EvalContext,
    EvaluatorResult,
    MatchesType,
    MaxCost,
    MaxDuration,
    MaxTokens,
    ToolCalled,
)
from agentensemble.evals._results import as_result
from agentensemble.outputs import EnsembleOutput, TaskOutput, TokenUsage, ToolCallRecord


class City(BaseModel):
    name: str
    population: int


def call(name: str, arguments: str) -> ToolCallRecord:
    return ToolCallRecord(name=name, arguments=arguments, output="ok", is_success=True)


def output(
    raw: str = "The capital is Paris.",
    parsed: Any = None,
    calls: tuple[ToolCallRecord, ...] = (),
    tokens: int = 100,
    cost: float | None = 0.002,
) -> EnsembleOutput:
    task = TaskOutput(
        raw=raw, parsed=parsed, task_description="d", agent_role="r", tool_calls=list(calls)
    )
    return EnsembleOutput(
        raw=raw,
        task_outputs=[task],
        usage=TokenUsage(total_tokens=tokens),
        cost_usd=cost,
    )


def ctx(out: EnsembleOutput, expected: Any = None, seconds: float = 1.0) -> EvalContext:
    case = Case(name="c", expected=expected)
    return EvalContext(
        case=case, output=out, expected=expected, duration=timedelta(seconds=seconds)
    )


PARIS = output()
CITY = output(
    raw='{"name": "Paris", "population": 2100000}', parsed=City(name="Paris", population=2100000)
)
SEARCHED = output(
    calls=(
        call("search", '{"q": "paris", "limit": 3}'),
        call("search", '{"q": "rome"}'),
        call("fetch", "{bad"),
    )
)

TABLE: list[tuple[str, Any, EvalContext, bool]] = [
    ("equals expected", Equals(), ctx(PARIS, "The capital is Paris."), True),
    ("equals ignores blanks", Equals(), ctx(PARIS, "  The capital is Paris.\n"), True),
    ("equals other text", Equals(), ctx(PARIS, "Rome"), False),
    ("equals own value wins", Equals("The capital is Paris."), ctx(PARIS, "Rome"), True),
    (
        "equals model vs mapping",
        Equals(),
        ctx(CITY, {"name": "Paris", "population": 2100000}),
        True,
    ),
    (
        "equals model vs other mapping",
        Equals(),
        ctx(CITY, {"name": "Rome", "population": 1}),
        False,
    ),
    ("contains any case", Contains("paris"), ctx(PARIS), True),
    ("contains case sensitive", Contains("paris", case_sensitive=True), ctx(PARIS), False),
    ("contains missing", Contains("Berlin"), ctx(PARIS), False),
    ("type of a model", MatchesType(City), ctx(CITY), True),
    ("type from json text", MatchesType(dict[str, Any]), ctx(output(raw='{"a": 1}')), True),
    ("type mismatch", MatchesType(City), ctx(PARIS), False),
    ("type str", MatchesType(str), ctx(PARIS), True),
    ("type list[int]", MatchesType(list[int]), ctx(output(raw="[1, 2]")), True),
    ("duration within", MaxDuration(2), ctx(PARIS, seconds=1.5), True),
    ("duration over", MaxDuration(1), ctx(PARIS, seconds=1.5), False),
    ("tokens within", MaxTokens(100), ctx(output(tokens=100)), True),
    ("tokens over", MaxTokens(99), ctx(output(tokens=100)), False),
    ("cost within", MaxCost(0.01), ctx(output(cost=0.002)), True),
    ("cost over", MaxCost(0.001), ctx(output(cost=0.002)), False),
    ("cost unknown", MaxCost(100), ctx(output(cost=None)), False),
    ("tool called", ToolCalled("search"), ctx(SEARCHED), True),
    ("tool not called", ToolCalled("delete"), ctx(SEARCHED), False),
    ("tool times", ToolCalled("search", times=2), ctx(SEARCHED), True),
    ("tool wrong times", ToolCalled("search", times=1), ctx(SEARCHED), False),
    ("tool with arguments", ToolCalled("search", {"q": "paris"}), ctx(SEARCHED), True),
    ("tool arguments and times", ToolCalled("search", {"q": "rome"}, times=1), ctx(SEARCHED), True),
    ("tool other arguments", ToolCalled("search", {"q": "oslo"}), ctx(SEARCHED), False),
    ("tool bad json arguments", ToolCalled("fetch", {"url": "x"}), ctx(SEARCHED), False),
    ("tool zero times", ToolCalled("delete", times=0), ctx(SEARCHED), True),
]


@pytest.mark.parametrize(
    ("evaluator", "context", "passes"), [t[1:] for t in TABLE], ids=[t[0] for t in TABLE]
)
def test_builtin_evaluator(evaluator: Any, context: EvalContext, passes: bool) -> None:
    result = evaluator(context)
    assert isinstance(result, EvaluatorResult)
    assert result.passed is passes, result.reason
    assert result.score == (1.0 if passes else 0.0)
    if not passes:
        assert result.reason


def test_an_unknown_cost_is_said_in_the_reason() -> None:
    result = MaxCost(100)(ctx(output(cost=None)))
    assert "unknown" in result.reason


@pytest.mark.parametrize(
    ("value", "passed", "score"),
    [
        (True, True, 1.0),
        (False, False, 0.0),
        (0.8, True, 0.8),
        (0.2, False, 0.2),
        (1, True, 1.0),
        (7.0, True, 1.0),
        (EvaluatorResult(passed=True, score=0.3, reason="ok"), True, 0.3),
        ("yes", False, 0.0),
        (None, False, 0.0),
        (float("nan"), False, 0.0),
    ],
)
def test_what_a_callable_returns_becomes_a_result(value: Any, passed: bool, score: float) -> None:
    result = as_result(value)
    assert (result.passed, result.score) == (passed, score)
