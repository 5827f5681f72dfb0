"""The ``agentensemble`` command: run, validate, --version; exit codes 0 ok, 1 run failed,
2 bad usage or crew file, 130 interrupted; result on stdout, progress on stderr, JSON with
--json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentensemble
from agentensemble import Ensemble, EnsembleOutput
from agentensemble.cli import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, build_parser, main
from agentensemble.cli._common import parse_review as _review

CrewFile = Callable[..., Path]
REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent
EXAMPLE = REPO_ROOT / "examples" / "crew.yaml"

CREW = """
model: openai/gpt-4o-mini
agents:
  writer:
    role: Writer
    goal: Write about {topic}
tasks:
  draft:
    description: Draft a note on {topic}
    agent: writer
  final: {description: Polish the draft, agent: writer, context: [draft]}
"""


def test_run_offline_prints_the_result_and_progress(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(crew_file(CREW)), "--input", "topic=AI", "--model", "scripted"])

    out, err = capsys.readouterr()
    assert code == EXIT_OK
    assert out.strip() == "(scripted answer) Polish the draft"
    assert "[1/2] Writer: Draft a note on AI" in err
    assert "[2/2] done in" in err
    assert "completed: 2 task(s)" in err


def test_run_json(crew_file: CrewFile, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(crew_file(CREW)), "-i", "topic=AI", "--model", "scripted", "--json"])

    payload = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK
    assert payload["ok"] is True and payload["exit_reason"] == "completed"
    assert [t["name"] for t in payload["tasks"]] == ["draft", "final"]
    assert payload["raw"] == "(scripted answer) Polish the draft"


def test_the_model_can_come_from_the_environment(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTENSEMBLE_MODEL", "scripted")
    assert main(["run", str(crew_file(CREW)), "-i", "topic=AI"]) == EXIT_OK
    assert "scripted answer" in capsys.readouterr().out


def test_the_example_crew_runs_offline_with_typed_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", str(EXAMPLE), "--input", "topic=AI", "--model", "scripted", "--json"])

    payload = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK, payload
    research = payload["tasks"][0]
    assert set(research["parsed"]) == {"headline", "points"}


def test_validate_checks_without_any_model_call(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def no_calls(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("validate must not call a model")

    monkeypatch.setattr("agentensemble.llm.litellm_model.LLM.complete", no_calls)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-validate-never-sent")  # validate checks it is set
    code = main(["validate", str(crew_file(CREW))])

    out, _ = capsys.readouterr()
    assert code == EXIT_OK
    assert out.strip().endswith("OK, 2 task(s); inputs: topic")


def test_validate_works_without_a_key_and_says_how_to_set_it(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["validate", str(crew_file(CREW))]) == EXIT_OK
    out, err = capsys.readouterr()
    assert "OK, 2 task(s)" in out
    assert "warning:" in err and "set OPENAI_API_KEY" in err and "--model scripted" in err
    assert "LLM(" not in err  # the command line's words, not Python's


def test_validate_reports_missing_inputs_and_context_warnings(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    starved = (
        "model: ollama/m\ntasks:\n"
        "  a: {description: Research X}\n"
        "  b: {description: Use the research above}\n"
    )
    path = crew_file(starved)
    assert main(["validate", str(path), "--json"]) == EXIT_OK
    payload = json.loads(capsys.readouterr().out)
    assert payload["warnings"] and "add context=[a]" in payload["warnings"][0]

    assert main(["validate", str(crew_file(CREW)), "--input", "other=1"]) == EXIT_USAGE
    assert "missing --input for: topic" in capsys.readouterr().err


def test_validate_fails_a_task_without_a_model(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(crew_file("tasks: [{description: D}]\n"))]) == EXIT_USAGE
    assert "has no model" in capsys.readouterr().err


def test_validate_checks_the_hierarchical_manager_and_its_workers(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    crew = """
    workflow: hierarchical
    agents:
      lead:
        role: Researcher
        goal: Find facts about {topic}
        llm: ollama/llama3.1
      helper:
        role: Writer
        goal: Write
    tasks:
      - description: Report on {topic}
    """
    assert main(["validate", str(crew_file(crew))]) == EXIT_USAGE
    assert "agent 'Writer' has no model" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--input", "topic"], "write NAME=VALUE"),
        (["--review", "carrier-pigeon"], "--review takes"),
        (["--review", "webhook"], "--review takes"),
        ([], "--input topic=..."),
    ],
)
def test_bad_usage_exits_2(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code = main(["run", str(crew_file(CREW)), "--model", "scripted", *args])
    assert code == EXIT_USAGE
    assert says in capsys.readouterr().err


def test_a_bad_crew_file_exits_2_naming_file_line_and_key(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    path = crew_file("agents:\n  a: {role: R, goal: G, backstory: B}\ntasks: [{description: D}]\n")
    assert main(["run", str(path), "--json"]) == EXIT_USAGE
    out, err = capsys.readouterr()
    assert f"{path}:2: agents.a.backstory: " in err
    assert json.loads(out)["error"]["type"] == "ConfigFileError"


def test_a_failed_run_exits_1_and_keeps_what_was_done(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    path = crew_file(
        """
        tasks:
          first: {description: Fine}
          second:
            description: Doomed
            output_guardrails: [yaml_tools:always_fails]
            max_output_retries: 0
        """
    )
    assert main(["run", str(path), "--model", "scripted", "--json"]) == EXIT_FAILED
    out, err = capsys.readouterr()
    payload = json.loads(out)
    assert payload["ok"] is False
    assert [t["name"] for t in payload["completed_tasks"]] == ["first"]
    assert "always_fails" in err


def test_ctrl_c_exits_130(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(self: Ensemble, inputs: Any = None) -> EnsembleOutput:
        raise KeyboardInterrupt

    monkeypatch.setattr(Ensemble, "run", interrupted)
    code = main(["run", str(crew_file(CREW)), "-i", "topic=AI", "--model", "scripted"])
    assert code == EXIT_INTERRUPTED
    assert "interrupted" in capsys.readouterr().err


def test_trace_is_saved_or_refused_clearly(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "trace.json"
    args = ["run", str(crew_file(CREW)), "-i", "topic=AI", "--model", "scripted"]
    code = main([*args, "--trace", str(target)])
    if "trace" in EnsembleOutput.model_fields:
        assert code == EXIT_OK
        assert json.loads(target.read_text())
    else:
        assert code == EXIT_USAGE
        assert "--trace needs run traces" in capsys.readouterr().err
        assert not target.exists()


def test_version_and_usage_errors_go_through_argparse(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as version:
        main(["--version"])
    assert version.value.code == 0
    assert capsys.readouterr().out.strip() == f"agentensemble {agentensemble.__version__}"
    with pytest.raises(SystemExit) as usage:
        main(["fly"])
    assert usage.value.code == EXIT_USAGE


DOCUMENTED = "AGENTENSEMBLE_MODEL=scripted agentensemble run examples/crew.yaml --input topic=AI"


def test_the_docs_show_the_offline_command() -> None:
    assert DOCUMENTED in (REPO_ROOT / "docs" / "yaml.md").read_text()


def test_the_console_script_runs_the_documented_command() -> None:
    """The exact command of docs/yaml.md, in a fresh process, as a user types it."""
    script = Path(sys.executable).with_name("agentensemble")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "agentensemble"]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",)}
    env["AGENTENSEMBLE_MODEL"] = "scripted"
    done = subprocess.run(
        [*command, "run", "examples/crew.yaml", "--input", "topic=AI"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "(scripted answer) Write a short article about AI" in done.stdout
    assert "[2/2] done in" in done.stderr


def test_review_option_turns_on_a_review_of_the_last_task(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", str(crew_file(CREW)), "-i", "topic=AI", "--model", "scripted"]
    code = main([*args, "--review", "auto", "--verbose"])

    err = capsys.readouterr().err
    assert code == EXIT_OK
    assert err.count("review (after_execution): continue") == 1  # the last task only
    assert "model scripted answered in" in err  # --verbose: a line per model call


def test_importing_the_library_loads_neither_yaml_nor_the_cli() -> None:
    code = (
        "import sys, agentensemble; "
        "print([m for m in ('yaml', 'agentensemble.cli', 'agentensemble.config') "
        "if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_model_scripted_reaches_the_hierarchical_manager_too(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    team = CREW.replace(
        "model: openai/gpt-4o-mini\n",
        "model: openai/gpt-4o-mini\nworkflow: hierarchical\nmanager_model: openai/gpt-4o\n",
    )
    code = main(["run", str(crew_file(team)), "-i", "topic=AI", "--model", "scripted", "--json"])

    assert code == EXIT_OK, capsys.readouterr().err  # no key asked for: no real model at all


@pytest.mark.parametrize(
    "review", [["--review", "auto"], ["--review", "webhook", "http://127.0.0.1:9/reviews"]]
)
def test_the_crew_file_may_follow_the_review_option(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], review: list[str]
) -> None:
    path = str(crew_file(CREW))
    parsed = build_parser().parse_args(["run", *review, path, "-i", "topic=AI"])
    assert _review(parsed) == (review[1], review[2] if len(review) > 2 else None)
    assert parsed.crew == path


def test_a_missing_crew_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--review", "auto"]) == EXIT_USAGE
    assert "the crew file is missing" in capsys.readouterr().err
