"""``Reviewed``: whether a human gate fired in a run (a task or tool review), and its decision.

Reviews are read from the run's trace (``EnsembleOutput.trace``); a run traced with
``capture="off"`` has none to read, and the evaluator fails saying so rather than guessing.
"""

from __future__ import annotations

from typing import Any

from pydantic.dataclasses import dataclass

from agentensemble.evals._results import EvalContext, EvaluatorResult, shorten
from agentensemble.evals.evaluators import Count, Evaluator


def reviews_of(trace: Any) -> list[dict[str, Any]]:
    """Each review of a traced run: its task (name or description), tool, timing, decision."""
    found = []
    for task in trace.tasks:
        for review in task.reviews:
            found.append(
                {
                    "task": task.task_name or task.description,
                    "tool": review.tool_name,
                    "timing": review.timing,
                    "decision": review.decision,
                }
            )
    return found


@dataclass(frozen=True)
class Reviewed(Evaluator):
    """A review fired: of ``task`` (its name or description) or of a call of ``tool`` when set,
    decided ``decision`` (``continue``, ``edit``, ``exit_early``; a tool's approve/reject as its
    handler names them) when set; exactly ``times`` times when set (``times=0``: none fired),
    else at least once."""

    task: str | None = None
    tool: str | None = None
    decision: str | None = None
    times: Count | None = None

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        trace = ctx.output.trace
        if trace is None:
            return EvaluatorResult(
                passed=False, score=0.0, reason="the run has no trace to read reviews from"
            )
        matching = [
            r
            for r in reviews_of(trace)
            if (self.task is None or r["task"] == self.task)
            and (self.tool is None or r["tool"] == self.tool)
            and (self.decision is None or str(r["decision"]).lower() == self.decision.lower())
        ]
        count = len(matching)
        passed = count > 0 if self.times is None else count == self.times
        want = "at least 1" if self.times is None else str(self.times)
        reason = f"{count} matching review(s), want {want}; reviews: {reviews_of(trace)}"
        return EvaluatorResult(passed=passed, score=float(passed), reason=shorten(reason))


__all__ = ["Reviewed", "reviews_of"]
