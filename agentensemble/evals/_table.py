"""The report as a plain-text table for a terminal: a line per case, a line per evaluator,
the totals, and with a baseline the regressions and improvements. Model text never appears
here raw: reasons are redacted, cut short and control characters shown escaped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentensemble.redaction import redact_text

if TYPE_CHECKING:
    from agentensemble.evals._report_model import CaseResult, ReportModel

WIDTH = 32  # of the case column


def printable(text: str, limit: int = 100) -> str:
    """One line of ``text``: redacted (before it is cut, so no half secret slips past the
    policy), control characters (escape sequences too) escaped, cut short."""
    cleaned = "".join(c if c.isprintable() else repr(c)[1:-1] for c in redact_text(text))
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3] + "..."


def money(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def _fails(result: CaseResult) -> str:
    for run in result.runs:
        if run.error is not None:
            return printable(f"error: {run.error}", 70)
    for run in result.runs:
        for name, verdict in run.results.items():
            if not verdict.passed:
                return printable(f"{name}: {verdict.reason}", 70)
    return ""


def verdict(report: ReportModel, min_pass_rate: float = 1.0) -> str:
    """``PASSED`` or ``FAILED`` as the ``eval`` command decides it: the share of passing cases
    against ``min_pass_rate`` (1.0: every case), so the table and the exit code agree."""
    if report.passed or report.pass_rate >= min_pass_rate:
        return "PASSED" if report.passed else f"PASSED (at least {min_pass_rate:.0%} required)"
    return "FAILED"


def format_report(
    report: ReportModel, baseline: ReportModel | None = None, min_pass_rate: float = 1.0
) -> str:
    repeat = max(report.repeat, 1)
    lines = [
        f"Evaluation {printable(report.name)}: {len(report.cases)} case(s) x {repeat} run(s)",
        "",
        f"{'case':<{WIDTH}} {'result':<6} {'runs':>7} {'mean s':>8} {'tokens':>8}  first failure",
    ]
    for result in report.cases:
        passed = sum(run.passed for run in result.runs)
        lines.append(
            f"{printable(result.case.name, WIDTH):<{WIDTH}} "
            f"{'PASS' if result.passed else 'FAIL':<6} "
            f"{f'{passed}/{len(result.runs)}':>7} "
            f"{result.mean_duration.total_seconds():>8.3f} {result.tokens:>8}  {_fails(result)}"
        )
    rates, scores = report.evaluator_pass_rates(), report.mean_scores()
    if rates:
        lines += ["", f"{'evaluator':<{WIDTH}} {'passed':>7} {'score':>7}"]
        for name, rate in rates.items():
            lines.append(f"{printable(name, WIDTH):<{WIDTH}} {rate:>7.0%} {scores[name]:>7.2f}")
    passed_cases = sum(c.passed for c in report.cases)
    lines += [
        "",
        f"{verdict(report, min_pass_rate)}: {passed_cases}/{len(report.cases)} cases "
        f"({report.pass_rate:.0%}), {report.tokens} tokens, cost {money(report.cost_usd)}, "
        f"{report.duration.total_seconds():.2f}s",
    ]
    if baseline is not None:
        diff = report.compare(baseline)
        lines.append(
            f"Against the baseline: {len(diff.regressions)} regression(s), "
            f"{len(diff.improvements)} improvement(s)"
        )
        for label, names in (("regressed", diff.regressions), ("improved", diff.improvements)):
            for name in names:
                lines.append(f"  {label}: {printable(name)} ({diff.changes[name]})")
        for label, names in (("new", diff.added), ("missing", diff.removed)):
            if names:
                lines.append(f"  {label}: {', '.join(printable(n) for n in names)}")
        for name, change in diff.evaluators.items():
            lines.append(f"  evaluator {printable(name)}: {change}")
        lines.append(
            f"  pass rate {baseline.pass_rate:.0%} -> {report.pass_rate:.0%}, tokens "
            f"{baseline.tokens} -> {report.tokens}, cost {money(baseline.cost_usd)} -> "
            f"{money(report.cost_usd)}"
        )
    return redact_text("\n".join(line.rstrip() for line in lines))


__all__ = ["format_report", "money", "printable", "verdict"]
