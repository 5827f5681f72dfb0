"""What an evaluator sees (``EvalContext``) and what it says (``EvaluatorResult``), and the one
rule that turns a callable's answer (bool, number or result) into a result."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from agentensemble.evals._case import Case
    from agentensemble.outputs import EnsembleOutput

MAX_REASON = 2_000  # reasons may quote model output: bounded in reports and pages


class EvaluatorResult(BaseModel):
    """One evaluator's verdict on one run: passed, a score from 0 to 1, and why."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    score: float = Field(description="0..1; a bool result scores 1.0 or 0.0")
    reason: str = ""


@dataclass(frozen=True)
class EvalContext:
    """One run of one case, as an evaluator sees it."""

    case: Case
    output: EnsembleOutput
    expected: Any
    duration: timedelta


def shorten(text: str, limit: int = MAX_REASON) -> str:
    """``text`` cut to ``limit`` characters, saying so."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


def as_result(value: Any) -> EvaluatorResult:
    """A callable's answer as a result: a bool scores 1.0 or 0.0; a number is the score and
    passes at ``PASS_SCORE``; a result stays as it is. Anything else is the evaluator's mistake,
    said in its reason (never a pass)."""
    if isinstance(value, EvaluatorResult):
        if len(value.reason) <= MAX_REASON:
            return value
        return value.model_copy(update={"reason": shorten(value.reason)})
    if isinstance(value, bool):
        return EvaluatorResult(passed=value, score=1.0 if value else 0.0)
    if isinstance(value, int | float) and not math.isnan(value):
        score = float(value)
        return EvaluatorResult(passed=score >= PASS_SCORE, score=min(max(score, 0.0), 1.0))
    return EvaluatorResult(
        passed=False,
        score=0.0,
        reason=shorten(
            "the evaluator returned "
            f"{type(value).__name__}; return a bool, a score from 0 to 1 or an EvaluatorResult"
        ),
    )


#: A bare score passes at this value (the same default as LLMJudge's threshold).
PASS_SCORE = 0.5

__all__ = ["MAX_REASON", "PASS_SCORE", "EvalContext", "EvaluatorResult", "as_result", "shorten"]
