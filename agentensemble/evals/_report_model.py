"""The data of an evaluation's report: per run, per case and in total; saved as JSON and compared
with a baseline (``compare``). Below ``_table.py`` and ``html.py``, which show it, and below
``report.py``, whose ``EvalReport`` adds the table and the page (no import circle).

Every way out of a report (``to_json``/``save``, ``to_html``/``save_html``, ``print``, the
``eval`` command) passes the one redaction policy: model answers, tool arguments and errors are
where secrets echo.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer
from typing_extensions import Self

from agentensemble._base.regular_file import read_regular_file
from agentensemble.evals._results import EvaluatorResult
from agentensemble.evals.dataset import Case
from agentensemble.outputs import EnsembleOutput
from agentensemble.redaction import redact


class CaseRun(BaseModel):
    """One run of one case: the output (None if the run raised), the error, the verdicts."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    output: EnsembleOutput | None = None
    error: str | None = None
    duration: timedelta = timedelta(0)
    results: dict[str, EvaluatorResult] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.error is None and all(r.passed for r in self.results.values())

    @field_serializer("output")
    def _output(self, output: EnsembleOutput | None) -> Any:
        # the trace can be large and the page shows the tool calls from the task outputs
        return None if output is None else output.model_dump(mode="json", exclude={"trace"})


class CaseResult(BaseModel):
    """Every run of one case; it passes when every evaluator passes in every run."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    case: Case
    passed: bool
    runs: list[CaseRun]
    scores: dict[str, float] = Field(default_factory=dict, description="mean per evaluator")

    @field_serializer("case")
    def _case(self, case: Case) -> Any:
        from agentensemble.evals._files import case_data

        return case_data(case, with_evaluators=False)

    @property
    def pass_rate(self) -> float:
        """The share of runs that passed."""
        return sum(run.passed for run in self.runs) / len(self.runs) if self.runs else 0.0

    def evaluator_pass_rates(self) -> dict[str, float]:
        return _pass_rates(self.runs)

    @property
    def mean_duration(self) -> timedelta:
        return timedelta(seconds=fmean(r.duration.total_seconds() for r in self.runs or [_NONE]))

    @property
    def tokens(self) -> int:
        return sum(r.output.usage.total_tokens for r in self.runs if r.output is not None)

    @property
    def cost_usd(self) -> float | None:
        """USD of the completed runs; None if any of them has an unknown cost."""
        return _cost(self.runs)


_NONE = CaseRun()
MAX_REPORT_BYTES = 200_000_000
"""A saved report (``--baseline``) longer than this is refused unread."""


def _pass_rates(runs: list[CaseRun]) -> dict[str, float]:
    seen: dict[str, list[bool]] = {}
    for run in runs:
        for name, result in run.results.items():
            seen.setdefault(name, []).append(result.passed)
    return {name: sum(flags) / len(flags) for name, flags in seen.items()}


def _cost(runs: list[CaseRun]) -> float | None:
    costs = [run.output.cost_usd for run in runs if run.output is not None]
    if any(cost is None for cost in costs):
        return None
    return sum(cost for cost in costs if cost is not None)


def mean_scores(runs: list[CaseRun]) -> dict[str, float]:
    """The mean score of each evaluator over the runs it judged."""
    seen: dict[str, list[float]] = {}
    for run in runs:
        for name, result in run.results.items():
            seen.setdefault(name, []).append(result.score)
    return {name: fmean(scores) for name, scores in seen.items()}


class ReportDiff(BaseModel):
    """What changed against a baseline, by case name. ``ok`` when nothing regressed."""

    regressions: list[str] = Field(default_factory=list)
    improvements: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list, description="cases the baseline lacks")
    removed: list[str] = Field(default_factory=list, description="baseline cases not run now")
    changes: dict[str, str] = Field(
        default_factory=dict, description="case -> 'runs passed: before -> now'"
    )
    evaluators: dict[str, str] = Field(
        default_factory=dict, description="evaluator -> 'runs passed: 100% -> 50%', if changed"
    )

    @property
    def ok(self) -> bool:
        return not self.regressions


class ReportModel(BaseModel):
    """The result of ``evaluate``: every case's runs and verdicts, and the totals (shown by
    ``report.EvalReport``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    cases: list[CaseResult]
    repeat: int = 1
    eval_id: str | None = Field(
        default=None, description="a durable evaluation's id: evaluate again under it to resume"
    )
    started_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    duration: timedelta = timedelta(0)

    @property
    def pass_rate(self) -> float:
        """The share of cases that passed (every evaluator in every run)."""
        return sum(c.passed for c in self.cases) / len(self.cases) if self.cases else 0.0

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    @property
    def runs(self) -> list[CaseRun]:
        return [run for case in self.cases for run in case.runs]

    def evaluator_pass_rates(self) -> dict[str, float]:
        """Per evaluator, the share of the runs it judged that it passed."""
        return _pass_rates(self.runs)

    def mean_scores(self) -> dict[str, float]:
        return mean_scores(self.runs)

    @property
    def tokens(self) -> int:
        return sum(case.tokens for case in self.cases)

    @property
    def cost_usd(self) -> float | None:
        return _cost(self.runs)

    def case(self, name: str) -> CaseResult:
        for result in self.cases:
            if result.case.name == name:
                return result
        raise KeyError(f"no case named {name!r} in report {self.name!r}")

    def compare(self, baseline: ReportModel) -> ReportDiff:
        """Cases whose share of passing runs fell (regressions) or rose (improvements)."""
        before = {c.case.name: c for c in baseline.cases}
        diff = ReportDiff()
        for result in self.cases:
            name = result.case.name
            old = before.pop(name, None)
            if old is None:
                diff.added.append(name)
                continue
            if result.pass_rate == old.pass_rate:
                continue
            passed_now = sum(r.passed for r in result.runs)
            passed_before = sum(r.passed for r in old.runs)
            diff.changes[name] = (
                f"runs passed: {passed_before}/{len(old.runs)} -> {passed_now}/{len(result.runs)}"
            )
            (diff.regressions if result.pass_rate < old.pass_rate else diff.improvements).append(
                name
            )
        diff.removed.extend(before)
        old_rates = baseline.evaluator_pass_rates()
        for name, rate in self.evaluator_pass_rates().items():
            if name in old_rates and old_rates[name] != rate:
                diff.evaluators[name] = f"runs passed: {old_rates[name]:.0%} -> {rate:.0%}"
        return diff

    def to_json(self) -> str:
        """The report as JSON, through the redaction policy (``agentensemble.redaction``): a
        report carries model answers, tool arguments and errors, so it is a way out of the
        process like a log line; a secret in any of them is ``***`` in the file."""
        data = redact(self.model_dump(mode="json"))
        return json.dumps(data, indent=2, ensure_ascii=False)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``to_json()`` to ``path`` (redacted, as every way out of a report is)."""
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Self:
        """A saved report (cases come back without their evaluators: the results hold them)."""
        return cls.model_validate_json(read_regular_file(path, max_bytes=MAX_REPORT_BYTES))


__all__ = ["CaseResult", "CaseRun", "ReportDiff", "ReportModel", "mean_scores"]
