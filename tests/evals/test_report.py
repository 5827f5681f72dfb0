"""Reports: totals, a table for people, JSON round trip, and the diff against a baseline."""

from __future__ import annotations

import io
from pathlib import Path

from _support import geo_ensemble

from agentensemble.evals import Case, Contains, Dataset, EvalReport, MaxCost, evaluate

DATASET = Dataset(
    name="capitals",
    evaluators=[Contains("The capital is")],
    cases=[
        Case(name="france", inputs={"country": "France"}, evaluators=[Contains("Paris")]),
        Case(name="germany", inputs={"country": "Germany"}, evaluators=[Contains("Berlin")]),
        Case(name="spain", inputs={"country": "Spain"}, evaluators=[Contains("Madrid")]),
    ],
)


def test_a_report_saves_and_loads_with_everything_it_shows(tmp_path: Path) -> None:
    report = evaluate(geo_ensemble, DATASET, repeat=2)
    path = tmp_path / "report.json"
    report.save(path)
    again = EvalReport.load(path)
    assert again.name == "capitals" and again.repeat == 2
    assert [c.case.name for c in again.cases] == ["france", "germany", "spain"]
    assert again.cases[0].case.inputs == {"country": "France"}
    assert [c.passed for c in again.cases] == [True, True, False]
    assert again.pass_rate == report.pass_rate
    assert again.tokens == report.tokens
    assert again.evaluator_pass_rates() == report.evaluator_pass_rates()
    run = again.cases[0].runs[0]
    assert run.output is not None and run.output.task_outputs[0].tool_calls[0].name == "capital_of"
    assert again.to_json() == EvalReport.load(path).to_json()


def test_the_table_shows_each_case_each_evaluator_and_the_totals() -> None:
    report = evaluate(geo_ensemble, DATASET)
    out = io.StringIO()
    report.print(file=out)
    text = out.getvalue()
    assert "Evaluation capitals: 3 case(s) x 1 run(s)" in text
    lines = text.splitlines()
    assert any(line.startswith("france") and "PASS" in line for line in lines)
    assert any(
        line.startswith("spain") and "FAIL" in line and "'Madrid' not found" in line
        for line in lines
    )
    assert any(line.startswith("Contains#2") and "67%" in line for line in lines)
    assert "FAILED: 2/3 cases (67%)" in text
    assert "cost unknown" in text  # scripted models have no price: never shown as $0


def test_compare_lists_regressions_and_improvements() -> None:
    baseline = evaluate(geo_ensemble, DATASET)
    worse = evaluate(lambda: geo_ensemble(wrong=True), DATASET)
    diff = worse.compare(baseline)
    assert diff.regressions == ["france", "germany"]
    assert diff.improvements == ["spain"]
    assert not diff.ok
    assert diff.changes["france"] == "runs passed: 1/1 -> 0/1"
    assert baseline.compare(baseline).ok
    assert baseline.compare(worse).regressions == ["spain"]
    assert diff.evaluators == {
        "Contains#2": "runs passed: 67% -> 33%",  # Paris, Berlin, Madrid -> Madrid only
    }


def test_compare_names_cases_added_and_removed() -> None:
    baseline = evaluate(geo_ensemble, DATASET)
    smaller = Dataset(
        name="capitals", cases=[DATASET.cases[0], Case(name="italy", inputs={"country": "Italy"})]
    )
    diff = evaluate(geo_ensemble, smaller).compare(baseline)
    assert diff.ok and diff.added == ["italy"] and diff.removed == ["germany", "spain"]


def test_the_table_with_a_baseline_says_what_regressed() -> None:
    baseline = evaluate(geo_ensemble, DATASET)
    out = io.StringIO()
    evaluate(lambda: geo_ensemble(wrong=True), DATASET).print(file=out, baseline=baseline)
    assert "Against the baseline: 2 regression(s), 1 improvement(s)" in out.getvalue()
    assert "regressed: france (runs passed: 1/1 -> 0/1)" in out.getvalue()
    assert "evaluator Contains#2: runs passed: 67% -> 33%" in out.getvalue()
    assert "pass rate 67% -> 33%, tokens" in out.getvalue()


def test_hostile_text_cannot_drive_the_terminal() -> None:
    dataset = Dataset(
        name="evil\x1b[2J",
        cases=[
            Case(
                name="c\x1b]0;pwned\x07", inputs={"country": "\x1b[31mRed"}, evaluators=[MaxCost(1)]
            )
        ],
    )
    out = io.StringIO()
    evaluate(geo_ensemble, dataset).print(file=out)
    assert "\x1b" not in out.getvalue() and "\\x1b" in out.getvalue()
