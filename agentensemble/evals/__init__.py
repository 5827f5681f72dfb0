"""Evaluation: datasets of cases, evaluators, ``evaluate`` and reports (docs/evals.md).

Sits above ``Ensemble`` like the command line: it runs ensembles and is never imported by them
(``import agentensemble`` does not import it).
"""

from agentensemble.evals._results import EvalContext, EvaluatorResult
from agentensemble.evals.assertions import assert_dataset_passes
from agentensemble.evals.dataset import Case, Dataset
from agentensemble.evals.evaluators import (
    Contains,
    Equals,
    Evaluator,
    MatchesType,
    MaxCost,
    MaxDuration,
    MaxTokens,
    ToolCalled,
)
from agentensemble.evals.judge import LLMJudge
from agentensemble.evals.report import CaseResult, CaseRun, EvalReport, ReportDiff
from agentensemble.evals.reviewed import Reviewed
from agentensemble.evals.runner import aevaluate, evaluate
from agentensemble.evals.trajectory import Trajectory

__all__ = [
    "Case",
    "CaseResult",
    "CaseRun",
    "Contains",
    "Dataset",
    "Equals",
    "EvalContext",
    "EvalReport",
    "Evaluator",
    "EvaluatorResult",
    "LLMJudge",
    "MatchesType",
    "MaxCost",
    "MaxDuration",
    "MaxTokens",
    "ReportDiff",
    "Reviewed",
    "ToolCalled",
    "Trajectory",
    "aevaluate",
    "assert_dataset_passes",
    "evaluate",
]
