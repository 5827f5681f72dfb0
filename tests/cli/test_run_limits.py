"""``agentensemble run --max-cost / --max-model-calls`` and the crew file's ``limits:``: a budget
stops the run (exit 1, finished tasks kept in --json); a budget that cannot work is a usage
error (exit 2) before any model call."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentensemble.cli import EXIT_FAILED, EXIT_USAGE, main

CrewFile = Callable[..., Path]

CREW = """
model: openai/gpt-4o-mini
agents:
  writer: {role: Writer, goal: Write}
tasks:
  draft: {description: Draft a note, agent: writer}
  final: {description: Polish the draft, agent: writer, context: [draft]}
"""


def test_max_model_calls_stops_the_run_keeping_the_finished_task(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", str(crew_file(CREW)), "--model", "scripted", "--max-model-calls", "1", "--json"]
    )
    payload = json.loads(capsys.readouterr().out)
    assert code == EXIT_FAILED
    assert payload["error"]["type"] == "UsageLimitExceeded"
    assert "Usage limit model_calls=1 reached" in payload["error"]["message"]
    assert [task["name"] for task in payload["completed_tasks"]] == ["draft"]


def test_the_crew_files_limits_apply_and_the_command_line_tightens_them(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    crew = crew_file(CREW + "limits: {model_calls: 5, tool_calls: 3}\n")
    assert main(["run", str(crew), "--model", "scripted"]) == 0
    capsys.readouterr()
    assert main(["run", str(crew), "--model", "scripted", "--max-model-calls", "1"]) == EXIT_FAILED
    assert "model_calls=1" in capsys.readouterr().err


def test_max_cost_with_a_model_of_unknown_price_is_refused_before_any_call(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(crew_file(CREW)), "--model", "scripted", "--max-cost", "0.10"])
    assert code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "limits.cost_usd needs each model's price" in err
    assert "[1/2]" not in err  # no task started


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-cost", "-1", "--max-cost must be more than 0"),
        ("--max-cost", "0", "--max-cost must be more than 0"),
        ("--max-cost", "nan", "--max-cost must be more than 0"),
        ("--max-cost", "ten", "--max-cost takes a number"),
        ("--max-model-calls", "0", "--max-model-calls must be more than 0"),
        ("--max-model-calls", "2.5", "--max-model-calls takes a number"),
    ],
)
def test_a_budget_that_is_not_a_positive_number_is_a_usage_error(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["run", str(crew_file(CREW)), "--model", "scripted", option, value])
    assert caught.value.code == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_a_bad_limits_key_is_an_error_at_its_line(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    crew = crew_file(CREW + "limits:\n  model_calls: -3\n")
    assert main(["run", str(crew), "--model", "scripted"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "crew.yaml:" in err and "model_calls" in err
