"""The report as one self-contained HTML page: pass/fail at a glance, the trajectory of each
run (agents, tasks, tool calls in order), the verdicts, and the diff against a baseline.

Model output is hostile: every text is redacted (the one policy: a secret echoed in an answer,
an argument or an error is ``***``), goes through ``html.escape`` and is cut to a bounded length,
the page has no script, and its Content-Security-Policy forbids loading anything (no scripts,
no images from elsewhere, no fonts), so even a missed escape could neither run nor call home.
"""

from __future__ import annotations

import json
from html import escape
from typing import TYPE_CHECKING, Any

from agentensemble.evals._table import money, verdict
from agentensemble.redaction import redact, redact_text

if TYPE_CHECKING:
    from agentensemble.evals._report_model import CaseResult, CaseRun, ReportDiff, ReportModel
    from agentensemble.outputs import TaskOutput

MAX_TEXT = 4_000  # characters of any one answer, argument or reason shown
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.verdict{display:inline-block;padding:4px 14px;border-radius:999px;font-weight:700;color:#fff}
.pass{background:#1a7f37} .fail{background:#cf222e} .muted{color:#687082}
.stats{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.stat{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:10px 14px;min-width:110px}
.stat b{display:block;font-size:20px}
.grid{display:flex;flex-wrap:wrap;gap:4px;margin:8px 0}
.cell{width:18px;height:18px;border-radius:4px;display:inline-block}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #eceff3;vertical-align:top}
.bar{background:#eceff3;border-radius:4px;height:8px;width:140px;display:inline-block}
.bar i{display:block;height:8px;border-radius:4px;background:#1a7f37}
details.case{background:#fff;border:1px solid #dde1e8;border-radius:8px;margin:8px 0}
details.case>summary{cursor:pointer;padding:10px 14px;display:flex;gap:10px;align-items:center}
details.case>div{padding:0 14px 14px}
.chip{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600}
.chip.pass{color:#fff} .chip.fail{color:#fff}
.chip.regressed{background:#ffebe9;color:#cf222e;border:1px solid #cf222e}
.chip.improved{background:#dafbe1;color:#1a7f37;border:1px solid #1a7f37}
.run{border-left:4px solid #1a7f37;padding:6px 12px;margin:10px 0;background:#fbfcfd}
.run.failed{border-left-color:#cf222e}
ol.trajectory{margin:6px 0;padding-left:20px} ol.trajectory li{margin:3px 0}
.tool{font-family:ui-monospace,monospace;font-size:12px;background:#eef1f6;border-radius:4px;
padding:1px 6px;margin:0 4px 0 0;display:inline-block}
.tool.failed{background:#ffebe9}
pre{white-space:pre-wrap;word-break:break-word;background:#f3f4f7;padding:8px;border-radius:6px;
margin:6px 0;max-height:320px;overflow:auto}
.diff li{margin:2px 0}
"""


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    """Any value as redacted, escaped text of bounded length (redacted first: a secret cut in
    two or escaped would slip past the policy)."""
    value = redact(value)
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = redact_text(text)
    if len(text) > limit:
        text = text[:limit] + f"... ({len(text) - limit} more characters)"
    return escape(text, quote=True)


def _chip(passed: bool) -> str:
    return (
        f'<span class="chip {"pass" if passed else "fail"}">{"PASS" if passed else "FAIL"}</span>'
    )


def _stat(label: str, value: str) -> str:
    return f'<div class="stat"><b>{value}</b><span class="muted">{escape(label)}</span></div>'


def _bar(rate: float) -> str:
    return f'<span class="bar"><i style="width:{rate * 100:.0f}%"></i></span> {rate:.0%}'


def _trajectory(tasks: list[TaskOutput]) -> str:
    items = []
    for task in tasks:
        tools = "".join(
            f'<span class="tool{"" if call.is_success else " failed"}" '
            f'title="{_text(call.arguments, 500)}">{_text(call.name, 100)}'
            f"{'' if call.is_success else ' &#x2717;'}</span>"
            for call in task.tool_calls
        )
        name = task.task_name or task.task_description
        items.append(
            f"<li><b>{_text(task.agent_role, 200)}</b> &rarr; {_text(name, 200)}"
            f"<br>{tools or '<span class=muted>no tool calls</span>'}</li>"
        )
    return f'<ol class="trajectory">{"".join(items)}</ol>' if items else ""


def _run(number: int, run: CaseRun) -> str:
    parts = [
        f'<div class="run{"" if run.passed else " failed"}">',
        f"<b>Run {number}</b> {_chip(run.passed)} "
        f'<span class="muted">{run.duration.total_seconds():.3f}s',
    ]
    if run.output is not None:
        parts.append(f", {run.output.usage.total_tokens} tokens, cost {money(run.output.cost_usd)}")
    parts.append("</span>")
    if run.error is not None:
        parts.append(f"<pre>{_text(run.error)}</pre>")
    if run.results:
        rows = "".join(
            f"<tr><td>{_text(name, 200)}</td><td>{_chip(result.passed)}</td>"
            f"<td>{result.score:.2f}</td><td>{_text(result.reason)}</td></tr>"
            for name, result in run.results.items()
        )
        parts.append(
            "<table><tr><th>evaluator</th><th>result</th><th>score</th><th>reason</th></tr>"
            f"{rows}</table>"
        )
    if run.output is not None:
        parts.append(_trajectory(run.output.task_outputs))
        parts.append(f"<div class=muted>Answer</div><pre>{_text(run.output.raw)}</pre>")
    parts.append("</div>")
    return "".join(parts)


def _case(result: CaseResult, diff: ReportDiff | None) -> str:
    name = result.case.name
    change = ""
    if diff is not None and name in diff.regressions:
        change = f'<span class="chip regressed">regressed: {_text(diff.changes[name])}</span>'
    elif diff is not None and name in diff.improvements:
        change = f'<span class="chip improved">improved: {_text(diff.changes[name])}</span>'
    passed = sum(run.passed for run in result.runs)
    details = [
        f"<div class=muted>Inputs</div><pre>{_text(result.case.inputs)}</pre>",
    ]
    if result.case.expected is not None:
        details.append(f"<div class=muted>Expected</div><pre>{_text(result.case.expected)}</pre>")
    details += [_run(n, run) for n, run in enumerate(result.runs, 1)]
    return (
        f'<details class="case" data-case="{_text(name, 200)}" '
        f'data-passed="{str(result.passed).lower()}"{"" if result.passed else " open"}>'
        f"<summary>{_chip(result.passed)}<b>{_text(name, 200)}</b>"
        f'<span class="muted">{passed}/{len(result.runs)} runs passed</span>{change}</summary>'
        f"<div>{''.join(details)}</div></details>"
    )


def _changed(items: str) -> str:
    return f"<h3>Evaluators that changed</h3><ul class=diff>{items}</ul>" if items else ""


def _diff(diff: ReportDiff, report: ReportModel, baseline: ReportModel) -> str:
    def block(title: str, names: list[str], kind: str) -> str:
        if not names:
            return ""
        items = "".join(
            f"<li>{_text(n, 200)} <span class=muted>{_text(diff.changes.get(n, ''))}</span></li>"
            for n in names
        )
        return f'<h3 class="{kind}-title">{title} ({len(names)})</h3><ul class="diff">{items}</ul>'

    headline = "No regressions" if diff.ok else f"{len(diff.regressions)} regression(s)"
    totals = (
        f"pass rate {baseline.pass_rate:.0%} &rarr; {report.pass_rate:.0%}, tokens "
        f"{baseline.tokens} &rarr; {report.tokens}, cost {escape(money(baseline.cost_usd))} "
        f"&rarr; {escape(money(report.cost_usd))}"
    )
    evaluators = "".join(
        f"<li>{_text(name, 200)} <span class=muted>{_text(change)}</span></li>"
        for name, change in diff.evaluators.items()
    )
    return (
        f'<section id="baseline"><h2>Against the baseline: {headline}</h2>'
        f'<p class="totals">{totals}</p>'
        f"{block('Regressions', diff.regressions, 'regressions')}"
        f"{block('Improvements', diff.improvements, 'improvements')}"
        f"{block('New cases', diff.added, 'added')}"
        f"{block('Missing cases', diff.removed, 'removed')}"
        f"{_changed(evaluators)}"
        "</section>"
    )


def report_html(
    report: ReportModel, baseline: ReportModel | None = None, min_pass_rate: float = 1.0
) -> str:
    """The whole page, as text; its verdict as the ``eval`` command decides it."""
    diff = report.compare(baseline) if baseline is not None else None
    passed = sum(c.passed for c in report.cases)
    cells = "".join(
        f'<span class="cell {"pass" if c.passed else "fail"}" title="{_text(c.case.name, 200)}">'
        "</span>"
        for c in report.cases
    )
    scores = report.mean_scores()
    evaluators = "".join(
        f"<tr><td>{_text(name, 200)}</td><td>{_bar(rate)}</td><td>{scores[name]:.2f}</td></tr>"
        for name, rate in report.evaluator_pass_rates().items()
    )
    shown_verdict = verdict(report, min_pass_rate)
    ok = shown_verdict != "FAILED"
    stats = "".join(
        (
            _stat("cases passed", f"{passed}/{len(report.cases)}"),
            _stat("pass rate", f"{report.pass_rate:.0%}"),
            _stat("runs per case", str(report.repeat)),
            _stat("tokens", str(report.tokens)),
            _stat("cost", escape(money(report.cost_usd))),
            _stat("duration", f"{report.duration.total_seconds():.2f}s"),
        )
    )
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>Evaluation {_text(report.name, 200)}: {escape(shown_verdict)}</title>"
        f"<style>{STYLE}</style></head><body><main>"
        f"<h1>Evaluation {_text(report.name, 200)}</h1>"
        f'<span id="verdict" class="verdict {"pass" if ok else "fail"}">{escape(shown_verdict)}'
        "</span>"
        f' <span class="muted">started {escape(report.started_at.isoformat(timespec="seconds"))}'
        f"</span><div class=stats>{stats}</div>"
        f'<div class="grid" aria-label="cases at a glance">{cells}</div>'
        f"{_diff(diff, report, baseline) if diff is not None and baseline is not None else ''}"
        "<h2>Evaluators</h2><table><tr><th>evaluator</th><th>runs passed</th>"
        f"<th>mean score</th></tr>{evaluators}</table>"
        f"<h2>Cases</h2>{''.join(_case(c, diff) for c in report.cases)}"
        "</main></body></html>"
    )


__all__ = ["CSP", "report_html"]
