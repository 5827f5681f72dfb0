"""The CLI as a channel out of the process: a secret the run met never reaches the terminal, and
``--trace`` to a path that cannot be written never costs the result."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from agentensemble.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main

CrewFile = Callable[..., Path]

CREW = """
model: openai/gpt-4o-mini
tasks:
  - description: Say hello
"""

PATH_TOKEN = "cli0PathTok3n9876543210"
QUERY_TOKEN = "cli-query-secret-4242"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.parametrize("as_json", [False, True])
def test_an_mcp_url_token_is_not_in_the_error_the_cli_prints(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    url = f"http://127.0.0.1:{free_port()}/t/{PATH_TOKEN}/mcp?key={QUERY_TOKEN}"
    crew = f"""
    model: openai/gpt-4o-mini
    agents:
      helper:
        role: Helper
        goal: Help
        tools:
          - agentensemble.mcp:MCPServerHTTP: {{url: "{url}", startup_timeout: 20}}
    tasks:
      - {{description: Help, agent: helper}}
    """
    argv = ["run", str(crew_file(crew)), "--model", "scripted"] + (["--json"] if as_json else [])
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == EXIT_USAGE  # found before any model call
    assert "could not start" in out + err
    assert PATH_TOKEN not in out + err and QUERY_TOKEN not in out + err


def test_a_trace_path_that_cannot_be_written_is_refused_before_the_run(
    crew_file: CrewFile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-folder" / "trace.json"
    code = main(["run", str(crew_file(CREW)), "--model", "scripted", "--trace", str(missing)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "--trace" in err and "does not exist" in err
    assert "completed:" not in err  # nothing was run (and paid for) to be lost

    code = main(["run", str(crew_file(CREW)), "--model", "scripted", "--trace", str(tmp_path)])
    assert code == EXIT_USAGE
    assert "is a folder" in capsys.readouterr().err


def test_a_trace_that_fails_to_save_after_the_run_keeps_the_result(
    crew_file: CrewFile,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentensemble.tracing.trace import ExecutionTrace

    def full_disk(self: object, path: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ExecutionTrace, "save", full_disk)
    target = tmp_path / "trace.json"
    code = main(["run", str(crew_file(CREW)), "--model", "scripted", "--trace", str(target)])
    out, err = capsys.readouterr()
    assert code == EXIT_FAILED
    assert "(scripted answer) Say hello" in out  # the result was printed first
    assert "No space left on device" in err


def test_the_trace_is_saved_where_asked(
    crew_file: CrewFile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "trace.json"
    code = main(["run", str(crew_file(CREW)), "--model", "scripted", "--trace", str(target)])
    assert code == EXIT_OK
    assert json.loads(target.read_text())["run_id"]
    assert "(scripted answer) Say hello" in capsys.readouterr().out


@pytest.mark.parametrize("as_json", [False, True])
def test_a_key_in_the_result_is_redacted_on_the_terminal(
    crew_file: CrewFile, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    crew = "model: m/m\ntasks:\n  - description: Echo sk-live-cli0123456789abcdef\n"
    argv = ["run", str(crew_file(crew)), "--model", "scripted"] + (["--json"] if as_json else [])
    assert main(argv) == EXIT_OK
    out = capsys.readouterr().out
    assert "(scripted answer) Echo ***" in out  # the scripted model echoes its task
    assert "sk-live-cli0123456789abcdef" not in out
