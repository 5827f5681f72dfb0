"""Errors of the command line and of crew files give the crew-file or command-line fix, never a
Python one; ``validate`` takes run's options, needs no key, and starts and stops MCP servers."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import agentensemble
from agentensemble.cli import EXIT_OK, EXIT_USAGE, main

CrewFile = Callable[..., Path]
REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent
PYTHON_WORDS = ("Ensemble(", "Agent(", "LLM(", "Review.required(", "review_handler=", "inputs=")

REVIEWED = """
agents:
  writer:
    role: Writer
    goal: Write about {topic}
tasks:
  draft:
    description: Draft a note on {topic}
    agent: writer
    review: required
"""
NO_MODEL = """
agents:
  writer: {role: Writer, goal: Write}
tasks:
  draft: {description: Draft, agent: writer}
"""
KEYED = "model: openai/gpt-4o-mini\n" + NO_MODEL


@pytest.mark.parametrize(
    ("crew", "argv", "fix"),
    [
        (REVIEWED, ["--model", "scripted", "-i", "topic=AI"], "`review: {handler: console}`"),
        (REVIEWED, ["--model", "scripted", "-i", "topic=AI"], "--review console"),
        (NO_MODEL, [], "`model: openai/gpt-4o-mini`"),
        (NO_MODEL, [], "--model scripted"),
        (KEYED, [], "set OPENAI_API_KEY in the environment, or run offline with --model scripted"),
        (REVIEWED, ["--model", "scripted", "--review", "auto"], "--input topic=..."),
    ],
    ids=["review-file", "review-option", "model-file", "model-option", "key", "input"],
)
def test_run_errors_name_the_crew_file_or_command_line_fix(
    crew_file: CrewFile,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    crew: str,
    argv: list[str],
    fix: str,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AGENTENSEMBLE_MODEL", raising=False)
    assert main(["run", str(crew_file(crew)), *argv]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert fix in err
    assert not [word for word in PYTHON_WORDS if word in err], err


def test_the_review_option_gives_a_reviewing_crew_its_reviewer(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(crew_file(REVIEWED))
    argv = [path, "--review", "auto", "--model", "scripted", "-i", "topic=AI"]
    assert main(["validate", *argv]) == EXIT_OK
    assert main(["run", *argv]) == EXIT_OK
    assert "(scripted answer) Draft a note on AI" in capsys.readouterr().out


def test_validate_takes_the_same_options_as_run(crew_file: CrewFile) -> None:
    from agentensemble.cli import build_parser

    parser = build_parser()
    path = str(crew_file(REVIEWED))
    options = ["--review", "console", "--trace", "t.json", "-v", "--json", "-i", "topic=AI"]
    for command in ("run", "validate"):
        parsed = parser.parse_args([command, path, *options, "--model", "scripted"])
        assert (parsed.review, parsed.trace, parsed.verbose) == (["console"], "t.json", True)


def _mcp_crew(script: str) -> str:
    return (
        "model: openai/gpt-4o-mini\n"
        "agents:\n  geo:\n    role: Geographer\n    goal: Answer\n    tools:\n"
        "      - agentensemble.mcp:MCPServerStdio:\n"
        f"          command: {sys.executable!r}\n"
        f"          args: [{script!r}]\n"
        "          prefix: geo\n"
        "tasks:\n  ask:\n    description: The capital of France\n    agent: geo\n"
    )


def test_validate_starts_and_stops_the_crews_mcp_servers(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mcp")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    script = str(REPO_ROOT / "examples" / "_tiny_mcp_server.py")
    assert main(["validate", str(crew_file(_mcp_crew(script)))]) == EXIT_OK
    assert "started and stopped: MCP server" in capsys.readouterr().out


def test_validate_fails_when_an_mcp_server_does_not_start(
    crew_file: CrewFile,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    pytest.importorskip("mcp")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    broken = tmp_path / "broken_server.py"
    broken.write_text("raise SystemExit('no server here')\n")
    assert main(["validate", str(crew_file(_mcp_crew(str(broken))))]) == EXIT_USAGE
    assert "MCP server" in capsys.readouterr().err
