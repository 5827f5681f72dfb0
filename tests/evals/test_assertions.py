"""The pytest pattern: a dataset asserted in a test suite, whole or one test per case."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import geo_ensemble

from agentensemble.evals import Case, Contains, Dataset, assert_dataset_passes

CAPITALS = Dataset(
    name="capitals",
    cases=[
        Case(name="france", inputs={"country": "France"}, evaluators=[Contains("Paris")]),
        Case(name="italy", inputs={"country": "Italy"}, evaluators=[Contains("Rome")]),
    ],
)


def test_a_passing_dataset_returns_its_report() -> None:
    report = assert_dataset_passes(geo_ensemble, CAPITALS, repeat=2)
    assert report.passed and len(report.runs) == 4


def test_a_failing_dataset_fails_the_test_with_the_table() -> None:
    with pytest.raises(AssertionError) as caught:
        assert_dataset_passes(lambda: geo_ensemble(wrong=True), CAPITALS)
    message = str(caught.value)
    assert message.startswith("dataset 'capitals' failed: pass rate 0% < 100%")
    assert "'Paris' not found" in message and "FAILED: 0/2 cases" in message


def test_a_file_a_minimum_rate_and_a_baseline(tmp_path: Path) -> None:
    CAPITALS.save(tmp_path / "capitals.yaml")
    baseline = assert_dataset_passes(geo_ensemble, tmp_path / "capitals.yaml")
    baseline.save(tmp_path / "baseline.json")
    with pytest.raises(AssertionError, match="regressions against the baseline"):
        assert_dataset_passes(
            lambda: geo_ensemble(wrong=True),
            tmp_path / "capitals.yaml",
            min_pass_rate=0.0,
            baseline=tmp_path / "baseline.json",
        )


@pytest.mark.parametrize("name", [case.name for case in CAPITALS.cases])
def test_one_test_per_case(name: str) -> None:
    assert_dataset_passes(geo_ensemble, CAPITALS.only(name))


def test_only_refuses_unknown_cases() -> None:
    with pytest.raises(KeyError, match="spain"):
        CAPITALS.only("spain")
