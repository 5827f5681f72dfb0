"""Every way out of an eval report passes the one redaction policy: the saved JSON, the HTML
page, the printed table and the command line never carry a registered secret or a key-shaped
string, wherever it came from (a model's answer, a tool's arguments, a run's error, an
evaluator's exception). Issue 38: the saved reports did, while printing redacted."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.evals import Case, Dataset, EvalReport, evaluate
from agentensemble.redaction import register_secret
from agentensemble.testing import FunctionChatModel, tool_call

REGISTERED = "reg1stered-Secret-Value-7781"
KEY = "sk-proj-AbCdEf0123456789xyz"


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def leaky_ensemble() -> Ensemble:
    """Calls a tool with both secrets in its arguments, then answers with both."""

    def answer(messages: Sequence[Any], tools: Any) -> Any:
        if messages[-1].get("role") == "tool":
            return f"Done. The key is {KEY} and the password {REGISTERED}."
        return tool_call("lookup", {"query": f"{KEY} {REGISTERED}"})

    agent = Agent(role="Leaker", goal="Leak", tools=[lookup], llm=FunctionChatModel(answer))
    return Ensemble(tasks=[Task(description="Say {x}", expected_output="text", agent=agent)])


def failing_ensemble() -> Ensemble:
    raise RuntimeError(f"could not connect with {KEY} / {REGISTERED}")


def raising_evaluator(ctx: Any) -> bool:
    raise ValueError(f"judge failed: api_key={KEY} token {REGISTERED}")


def leaky_report() -> EvalReport:
    register_secret(REGISTERED)
    dataset = Dataset(
        name="leaks",
        evaluators=[raising_evaluator],
        cases=[Case(name="answer", inputs={"x": "hi"}), Case(name="crash", inputs={"x": "hi"})],
    )
    calls = iter([leaky_ensemble, failing_ensemble])
    return evaluate(lambda: next(calls)(), dataset, max_concurrency=1)


def as_json(report: EvalReport, tmp: Path) -> str:
    return report.to_json()


def saved_json(report: EvalReport, tmp: Path) -> str:
    report.save(tmp / "r.json")
    return (tmp / "r.json").read_text()


def as_html(report: EvalReport, tmp: Path) -> str:
    return report.to_html()


def saved_html(report: EvalReport, tmp: Path) -> str:
    report.save_html(tmp / "r.html", baseline=report)
    return (tmp / "r.html").read_text()


def printed(report: EvalReport, tmp: Path) -> str:
    out = io.StringIO()
    report.print(file=out, baseline=report)
    return out.getvalue()


WAYS_OUT: list[Callable[[EvalReport, Path], str]] = [
    as_json,
    saved_json,
    as_html,
    saved_html,
    printed,
]


@pytest.mark.parametrize("way_out", WAYS_OUT, ids=lambda f: f.__name__)
def test_no_way_out_of_a_report_carries_a_secret(
    way_out: Callable[[EvalReport, Path], str], tmp_path: Path
) -> None:
    report = leaky_report()
    # the secrets are really there, in every place the attack put them
    run = report.case("answer").runs[0]
    assert run.output is not None and KEY in run.output.raw
    assert report.case("crash").runs[0].error is not None
    text = way_out(report, tmp_path)
    assert KEY not in text and REGISTERED not in text
    assert "***" in text


def test_a_saved_report_still_loads_and_keeps_its_verdicts(tmp_path: Path) -> None:
    report = leaky_report()
    report.save(tmp_path / "r.json")
    again = EvalReport.load(tmp_path / "r.json")
    assert [c.case.name for c in again.cases] == ["answer", "crash"]
    assert [c.passed for c in again.cases] == [c.passed for c in report.cases]
    assert again.tokens == report.tokens
    raw = again.case("answer").runs[0].output
    assert raw is not None and "***" in raw.raw and KEY not in raw.raw
    assert json.loads(again.to_json())["name"] == "leaks"


def test_the_eval_command_writes_no_secret_anywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line: stdout (table and ``--json``), ``--save`` and ``--html``. The secret
    rides in a case's inputs, so the scripted model's prompts and the report both hold it."""
    from agentensemble.cli import main

    crew = Path(__file__).parents[2] / "examples" / "evals" / "crew.yaml"
    dataset = tmp_path / "d.yaml"
    dataset.write_text(f"cases:\n  - {{name: leak, inputs: {{topic: 'tides {KEY}'}}}}\n")
    for extra in ([], ["--json"]):
        main(
            ["eval", str(crew), str(dataset), "--model", "scripted", "--save",
             str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html"), *extra]
        )  # fmt: skip
        out, err = capsys.readouterr()
        saved = [(tmp_path / name).read_text() for name in ("r.json", "r.html")]
        for text in (out, err, *saved):
            assert KEY not in text
        assert "***" in (tmp_path / "r.json").read_text()
