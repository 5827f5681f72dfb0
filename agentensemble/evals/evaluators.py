"""The built-in evaluators: checks of one run's output, time, tokens, cost and tool calls.

Each is a small frozen dataclass (validated by pydantic, so a dataset file's bad arguments are
reported) with one ``evaluate(ctx)`` method; ``Trajectory`` and ``LLMJudge`` live in modules of
their own. Any callable ``(ctx) -> bool | float | EvaluatorResult`` is an evaluator too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from agentensemble.evals._results import EvalContext, EvaluatorResult, shorten
from agentensemble.outputs import EnsembleOutput
from agentensemble.untrusted import parse_json


class Evaluator:
    """Base of the built-in evaluators: ``evaluate(ctx)`` says whether one run passes."""

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult | Awaitable[EvaluatorResult]:
        raise NotImplementedError

    def __call__(self, ctx: EvalContext) -> EvaluatorResult | Awaitable[EvaluatorResult]:
        return self.evaluate(ctx)


def evaluator_arguments(evaluator: Evaluator) -> dict[str, Any]:
    """A built-in evaluator's keyword arguments that differ from their defaults (its file form)."""
    found: dict[str, Any] = {}
    for field in dataclasses.fields(evaluator):  # type: ignore[arg-type]
        value = getattr(evaluator, field.name)
        if field.default is dataclasses.MISSING or value != field.default:
            found[field.name] = value
    return found


def evaluator_name(evaluator: Any) -> str:
    """The key of an evaluator's results: its class name, or a callable's ``__name__``."""
    if isinstance(evaluator, Evaluator):
        return type(evaluator).__name__
    return str(getattr(evaluator, "__name__", type(evaluator).__name__))


#: A limit of a dataset file: a number that means one (never negative, NaN or infinite, which
#: made an evaluator that could never pass, or always would), as dataset.schema.json says.
Limit = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]


def _verdict(passed: bool, reason: str = "") -> EvaluatorResult:
    return EvaluatorResult(passed=passed, score=1.0 if passed else 0.0, reason=shorten(reason))


def output_value(output: EnsembleOutput) -> Any:
    """What a run answered: the last task's parsed value when it has one, else the text."""
    parsed = output.parsed
    return parsed if parsed is not None else output.raw


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def values_equal(actual: Any, expected: Any) -> bool:
    """Equal as a reader means it: text without surrounding blanks, models as their data (a
    dataset file's mapping equals a parsed pydantic model with the same fields)."""
    if isinstance(actual, str) and isinstance(expected, str):
        return actual.strip() == expected.strip()
    return bool(_plain(actual) == _plain(expected))


@dataclass(frozen=True)
class Equals(Evaluator):
    """The run's answer equals ``value`` (or, left out, the case's ``expected``)."""

    value: Any = None

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        expected = ctx.expected if self.value is None else self.value
        actual = output_value(ctx.output)
        if values_equal(actual, expected):
            return _verdict(True)
        return _verdict(False, f"expected {_plain(expected)!r}, got {_plain(actual)!r}")


@dataclass(frozen=True)
class Contains(Evaluator):
    """The run's final text contains ``text`` (ignoring case unless ``case_sensitive``)."""

    text: str
    case_sensitive: bool = False

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        raw, wanted = ctx.output.raw, self.text
        if not self.case_sensitive:
            raw, wanted = raw.casefold(), wanted.casefold()
        if wanted in raw:
            return _verdict(True)
        return _verdict(False, f"{self.text!r} not found in the output {ctx.output.raw!r}")


@dataclass(frozen=True)
class MatchesType(Evaluator):
    """The run's answer validates as ``type`` (a pydantic model, ``list[int]``, ``int``...);
    a text answer is read as JSON first when ``type`` is not ``str``."""

    type: Any

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        adapter: TypeAdapter[Any] = TypeAdapter(self.type)
        value = output_value(ctx.output)
        try:
            if isinstance(value, str) and self.type is not str:
                adapter.validate_json(value)
            else:
                adapter.validate_python(value)
        except (ValidationError, ValueError) as error:
            name = getattr(self.type, "__name__", repr(self.type))
            first = error.errors()[0]["msg"] if isinstance(error, ValidationError) else str(error)
            return _verdict(False, f"the answer is not a {name}: {first}")
        return _verdict(True)


@dataclass(frozen=True)
class MaxDuration(Evaluator):
    """The run took at most ``seconds``."""

    seconds: Limit

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        took = ctx.duration.total_seconds()
        return _verdict(took <= self.seconds, f"took {took:.3f}s (limit {self.seconds}s)")


@dataclass(frozen=True)
class MaxTokens(Evaluator):
    """The run spent at most ``n`` tokens (prompt and completion)."""

    n: Count

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        spent = ctx.output.usage.total_tokens
        return _verdict(spent <= self.n, f"spent {spent} tokens (limit {self.n})")


@dataclass(frozen=True)
class MaxCost(Evaluator):
    """The run cost at most ``usd``. An unknown cost (a model without a known price) fails:
    it never counts as zero."""

    usd: Limit

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        cost = ctx.output.cost_usd
        if cost is None:
            return _verdict(False, f"the cost is unknown (limit ${self.usd}): no known price")
        return _verdict(cost <= self.usd, f"cost ${cost:.6f} (limit ${self.usd})")


def _arguments_of(text: str) -> Any:
    try:  # the model's arguments: hostile, bounded like every outside text
        return parse_json(text, what="the arguments")
    except (ValueError, TypeError):
        return None


def _includes(actual: Any, wanted: dict[str, Any]) -> bool:
    return isinstance(actual, dict) and all(
        key in actual and values_equal(actual[key], value) for key, value in wanted.items()
    )


@dataclass(frozen=True)
class ToolCalled(Evaluator):
    """The run called tool ``name``: with at least the given ``arguments`` when set, exactly
    ``times`` times when set (else at least once)."""

    name: str
    arguments: dict[str, Any] | None = None
    times: Count | None = None

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        calls = [c for t in ctx.output.task_outputs for c in t.tool_calls if c.name == self.name]
        if self.arguments is not None:
            calls = [c for c in calls if _includes(_arguments_of(c.arguments), self.arguments)]
        what = self.name + (f" with {self.arguments}" if self.arguments is not None else "")
        count = len(calls)
        if self.times is None:
            return _verdict(count > 0, f"{what} called {count} time(s)")
        return _verdict(count == self.times, f"{what} called {count} time(s), want {self.times}")


__all__ = [
    "Contains",
    "Equals",
    "Evaluator",
    "MatchesType",
    "MaxCost",
    "MaxDuration",
    "MaxTokens",
    "ToolCalled",
    "evaluator_arguments",
    "evaluator_name",
    "output_value",
    "values_equal",
]
