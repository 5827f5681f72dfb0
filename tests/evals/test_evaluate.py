"""evaluate(): every case N times, K at once, a fresh ensemble per run; failures stay local."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from _support import geo_ensemble

from agentensemble import Agent, Ensemble, Task
from agentensemble.evals import (
    Case,
    Contains,
    Dataset,
    Equals,
    EvalContext,
    EvaluatorResult,
    ToolCalled,
    Trajectory,
    aevaluate,
    evaluate,
)
from agentensemble.testing import FunctionChatModel

CAPITALS = Dataset(
    name="capitals",
    evaluators=[ToolCalled("capital_of", times=1), Trajectory(["capital_of"], mode="exact")],
    cases=[
        Case(
            name="france",
            inputs={"country": "France"},
            expected="The capital is Paris.",
            evaluators=[Equals()],
        ),
        Case(name="germany", inputs={"country": "Germany"}, evaluators=[Contains("Berlin")]),
    ],
)


def test_a_dataset_passes_when_every_evaluator_passes_in_every_run() -> None:
    report = evaluate(geo_ensemble, CAPITALS, repeat=3)
    assert report.passed and report.pass_rate == 1.0
    assert [c.case.name for c in report.cases] == ["france", "germany"]
    france = report.case("france")
    assert len(france.runs) == 3
    assert set(france.runs[0].results) == {"ToolCalled", "Trajectory", "Equals"}
    assert france.scores == {"ToolCalled": 1.0, "Trajectory": 1.0, "Equals": 1.0}
    assert france.tokens > 0 and report.tokens == france.tokens + report.case("germany").tokens
    assert report.evaluator_pass_rates() == {
        "ToolCalled": 1.0,
        "Trajectory": 1.0,
        "Equals": 1.0,
        "Contains": 1.0,
    }


def test_a_wrong_answer_fails_its_case_with_the_reason() -> None:
    report = evaluate(lambda: geo_ensemble(wrong=True), CAPITALS)
    assert not report.passed and report.pass_rate == 0.0
    result = report.case("germany").runs[0].results["Contains"]
    assert not result.passed and "'Berlin' not found" in result.reason
    assert report.case("france").runs[0].results["Trajectory"].passed  # the tool still ran


def test_one_flaky_run_fails_the_case_and_scores_are_means() -> None:
    runs = iter([False, True, True])
    lock = threading.Lock()

    def sometimes(ctx: EvalContext) -> bool:
        with lock:
            return next(runs)

    dataset = Dataset(
        name="flaky", cases=[Case(name="c", inputs={"country": "Italy"}, evaluators=[sometimes])]
    )
    report = evaluate(geo_ensemble, dataset, repeat=3, max_concurrency=1)
    case = report.cases[0]
    assert not case.passed
    assert case.pass_rate == pytest.approx(2 / 3)
    assert case.scores["sometimes"] == pytest.approx(2 / 3)


def test_a_run_that_raises_fails_its_case_and_the_others_go_on() -> None:
    def factory() -> Ensemble:
        def answer(messages: Sequence[Any], tools: Any) -> str:
            if "Atlantis" in str(messages[-1].get("content")):
                raise RuntimeError("the model fell over")
            return "Fine."

        agent = Agent(role="A", goal="g", llm=FunctionChatModel(answer))
        return Ensemble(
            tasks=[Task(description="About {place}", expected_output="text", agent=agent)]
        )

    dataset = Dataset(
        name="d",
        evaluators=[Contains("Fine")],
        cases=[
            Case(name="atlantis", inputs={"place": "Atlantis"}),
            Case(name="missing input", inputs={"country": "x"}),
            Case(name="oslo", inputs={"place": "Oslo"}),
        ],
    )
    report = evaluate(factory, dataset, repeat=2)
    atlantis, missing, oslo = report.cases
    assert not atlantis.passed and "the model fell over" in (atlantis.runs[0].error or "")
    assert atlantis.runs[0].output is None and atlantis.runs[0].results == {}
    assert not missing.passed
    assert "PromptTemplateError" in (missing.runs[0].error or "")
    assert "{place}" in (missing.runs[1].error or "")
    assert oslo.passed
    assert report.pass_rate == pytest.approx(1 / 3)


def test_an_evaluator_that_raises_fails_itself_with_the_error() -> None:
    def broken(ctx: EvalContext) -> bool:
        raise KeyError("no such field")

    async def slow_ok(ctx: EvalContext) -> EvaluatorResult:
        await asyncio.sleep(0)
        return EvaluatorResult(passed=True, score=0.9, reason="async works")

    dataset = Dataset(
        name="d",
        cases=[
            Case(
                name="c",
                inputs={"country": "France"},
                evaluators=[broken, slow_ok, Contains("Paris")],
            )
        ],
    )
    run = evaluate(geo_ensemble, dataset).cases[0].runs[0]
    assert run.error is None
    assert run.results["broken"] == EvaluatorResult(
        passed=False, score=0.0, reason="raised KeyError: 'no such field'"
    )
    assert run.results["slow_ok"].score == 0.9
    assert run.results["Contains"].passed


def test_evaluators_of_the_same_class_each_keep_their_result() -> None:
    dataset = Dataset(
        name="d",
        evaluators=[Contains("capital")],
        cases=[
            Case(
                name="c",
                inputs={"country": "France"},
                evaluators=[Contains("Paris"), Contains("Rome")],
            )
        ],
    )
    results = evaluate(geo_ensemble, dataset).cases[0].runs[0].results
    assert {k: r.passed for k, r in results.items()} == {
        "Contains": True,
        "Contains#2": True,
        "Contains#3": False,
    }


@pytest.mark.anyio
async def test_at_most_max_concurrency_runs_at_once_and_each_gets_a_fresh_ensemble() -> None:
    running = peak = 0
    built: list[Ensemble] = []
    release = asyncio.Event()

    async def answer(messages: Sequence[Any], tools: Any) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 3:
            release.set()
        await asyncio.wait_for(release.wait(), 10)
        running -= 1
        return "ok"

    def factory() -> Ensemble:
        agent = Agent(role="A", goal="g", llm=FunctionChatModel(answer))
        ensemble = Ensemble(tasks=[Task(description="Say {x}", expected_output="t", agent=agent)])
        built.append(ensemble)
        return ensemble

    dataset = Dataset(name="d", cases=[Case(name=f"c{i}", inputs={"x": i}) for i in range(4)])
    seen: list[tuple[int, int]] = []
    report = await aevaluate(
        factory,
        dataset,
        repeat=2,
        max_concurrency=3,
        on_progress=lambda d, t, c, r: seen.append((d, t)),
    )
    assert report.passed
    assert peak == 3
    assert len({id(e) for e in built}) == 8
    assert seen == [(n, 8) for n in range(1, 9)]


def test_a_shared_ensemble_may_be_given_as_it_is() -> None:
    report = evaluate(geo_ensemble(), CAPITALS, repeat=2)
    assert report.passed


def test_a_factory_that_fails_or_returns_something_else_fails_the_runs() -> None:
    dataset = Dataset(name="d", cases=[Case(name="c")])
    report = evaluate(lambda: "not an ensemble", dataset)
    assert "not an Ensemble" in (report.cases[0].runs[0].error or "")


@pytest.mark.parametrize("settings", [{"repeat": 0}, {"max_concurrency": 0}])
def test_bad_settings_are_refused(settings: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        evaluate(geo_ensemble, CAPITALS, **settings)


def test_import_agentensemble_does_not_import_evals() -> None:
    import subprocess
    import sys

    code = "import sys, agentensemble; print('agentensemble.evals' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr
