"""``Trajectory``: which tools, tasks or agents a run went through, in which order.

The rule is a pure function over two lists of names (``trajectory_matches``), so it is tested
by table and by property; the evaluator only reads the names out of a run.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic.dataclasses import dataclass

from agentensemble.evals._results import EvalContext, EvaluatorResult, shorten
from agentensemble.evals.evaluators import Evaluator
from agentensemble.outputs import EnsembleOutput

Mode = Literal["exact", "in_order", "any_order", "subset", "superset"]
Of = Literal["tools", "tasks", "agents"]
MODES: tuple[Mode, ...] = ("exact", "in_order", "any_order", "subset", "superset")


def _in_order(actual: list[str], expected: list[str]) -> bool:
    remaining = iter(actual)
    return all(any(name == seen for seen in remaining) for name in expected)


def trajectory_matches(actual: list[str], expected: list[str], mode: Mode) -> bool:
    """Whether the run's names ``actual`` match ``expected`` in ``mode``:

    ``exact`` the same list; ``in_order`` the expected names appear in that order, others
    allowed between; ``any_order`` the same names as often, in any order; ``subset`` no name
    outside ``expected``; ``superset`` every expected name at least once.
    """
    if mode == "exact":
        return actual == expected
    if mode == "in_order":
        return _in_order(actual, expected)
    if mode == "any_order":
        return Counter(actual) == Counter(expected)
    if mode == "subset":
        return set(actual) <= set(expected)
    if mode == "superset":
        return set(expected) <= set(actual)
    raise ValueError(f"unknown trajectory mode {mode!r}: use one of {', '.join(MODES)}")


def names_of(output: EnsembleOutput, of: Of) -> list[str]:
    """The run's tool calls, tasks (``Task.name``, else its description) or agents (roles)."""
    if of == "tools":
        return [call.name for task in output.task_outputs for call in task.tool_calls]
    if of == "tasks":
        return [t.task_name or t.task_description for t in output.task_outputs]
    return [t.agent_role for t in output.task_outputs]


@dataclass(frozen=True)
class Trajectory(Evaluator):
    """The run's tools (or tasks, or agents) match ``expected`` in ``mode``."""

    expected: list[str]
    mode: Mode = "in_order"
    of: Of = "tools"

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        actual = names_of(ctx.output, self.of)
        passed = trajectory_matches(actual, list(self.expected), self.mode)
        reason = f"{self.of} {actual} vs expected {list(self.expected)} ({self.mode})"
        return EvaluatorResult(passed=passed, score=float(passed), reason=shorten(reason))


__all__ = ["MODES", "Mode", "Of", "Trajectory", "names_of", "trajectory_matches"]
