"""Reviewed: whether a human gate fired in a run, of which task or tool, with which decision."""

from __future__ import annotations

from typing import Any

import pytest

from agentensemble import Agent, Ensemble, Task
from agentensemble.evals import Case, Dataset, Reviewed, evaluate
from agentensemble.testing import FunctionChatModel

review = pytest.importorskip("agentensemble_review")


def reviewed_ensemble(decision: Any = None, capture: Any = "standard") -> Ensemble:
    agent = Agent(role="Writer", goal="g", llm=FunctionChatModel(lambda m, t: "Draft."))
    task = Task(name="draft", description="Write about {topic}", expected_output="t", agent=agent)
    if decision is None:
        return Ensemble(tasks=[task], capture=capture)
    return Ensemble(
        tasks=[task],
        review_policy="after_last_task",
        review_handler=review.ScriptedReviewHandler([decision]),
        capture=capture,
    )


CASE = [Case(name="c", inputs={"topic": "tides"})]


@pytest.mark.parametrize(
    ("evaluator", "decision", "passes"),
    [
        (Reviewed(), review.Continue(), True),
        (Reviewed(task="draft"), review.Continue(), True),
        (Reviewed(task="other"), review.Continue(), False),
        (Reviewed(decision="continue", times=1), review.Continue(), True),
        (Reviewed(decision="edit"), review.Edit(revised_output="Better."), True),
        (Reviewed(decision="edit"), review.Continue(), False),
        (Reviewed(), None, False),
        (Reviewed(times=0), None, True),
        (Reviewed(tool="delete_files"), review.Continue(), False),
    ],
)
def test_a_human_gate_that_fired(evaluator: Reviewed, decision: Any, passes: bool) -> None:
    dataset = Dataset(name="d", cases=CASE, evaluators=[evaluator])
    report = evaluate(lambda: reviewed_ensemble(decision), dataset)
    result = report.cases[0].runs[0].results["Reviewed"]
    assert result.passed is passes, result.reason


def test_without_a_trace_reviewed_says_it_cannot_tell() -> None:
    dataset = Dataset(name="d", cases=CASE, evaluators=[Reviewed(times=0)])
    report = evaluate(lambda: reviewed_ensemble(review.Continue(), capture="off"), dataset)
    result = report.cases[0].runs[0].results["Reviewed"]
    assert not result.passed and "no trace" in result.reason
