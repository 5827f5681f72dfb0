"""What an evaluation found (``EvalReport``): the data of ``_report_model.py``, shown as a terminal
table (``_table.py``) and a self-contained page (``html.py``).

Every way out of a report (``to_json``/``save``, ``to_html``/``save_html``, ``print``, the
``eval`` command) passes the one redaction policy: model answers, tool arguments and errors are
where secrets echo.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from agentensemble.evals._report_model import (
    CaseResult,
    CaseRun,
    ReportDiff,
    ReportModel,
    mean_scores,
)
from agentensemble.evals._table import format_report
from agentensemble.evals.html import report_html


class EvalReport(ReportModel):
    """The result of ``evaluate``: every case's runs and verdicts, and the totals."""

    def print(
        self,
        file: IO[str] | None = None,
        *,
        baseline: ReportModel | None = None,
        min_pass_rate: float = 1.0,
    ) -> None:
        """A readable table: one line per case, then per evaluator, then the totals (every
        text redacted, as in the JSON and the page). The verdict is PASSED when at least
        ``min_pass_rate`` of the cases passed (default: every case), as ``eval`` decides."""
        print(format_report(self, baseline, min_pass_rate), file=file)

    def to_html(self, baseline: ReportModel | None = None, *, min_pass_rate: float = 1.0) -> str:
        """A self-contained page: pass/fail at a glance, each run's trajectory, the diff."""
        return report_html(self, baseline, min_pass_rate)

    def save_html(
        self,
        path: str | os.PathLike[str],
        baseline: ReportModel | None = None,
        *,
        min_pass_rate: float = 1.0,
    ) -> None:
        """Write ``to_html()`` to ``path`` (every text on the page redacted, then escaped)."""
        Path(path).write_text(self.to_html(baseline, min_pass_rate=min_pass_rate), encoding="utf-8")


__all__ = ["CaseResult", "CaseRun", "EvalReport", "ReportDiff", "mean_scores"]
