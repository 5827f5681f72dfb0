"""What ``agentensemble run`` prints to a terminal cannot drive it: a model's answer (here the
scripted model echoing an input) holding an OSC title change, a screen clear and a bidi
override is shown escaped on a terminal, as the progress lines already were, and given as it
is to a pipe (another program's data); an error line is escaped wherever it goes."""

from __future__ import annotations

import argparse
import json
import os
import pty
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from test_cli_bad_files import CREW, REPO_ROOT, agentensemble_cli

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202eevil"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\u202eevil"


def on_a_terminal(*args: str, cwd: str) -> bytes:
    """stdout of the command when it is a terminal (a pseudo-terminal), stderr discarded."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTENSEMBLE_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "agentensemble", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env={**env, "PYTHONPATH": str(REPO_ROOT), "HOME": cwd},
        cwd=cwd,
    )
    os.close(follower)
    seen = b""
    while True:  # ends when the command closes the terminal (EIO) or after a bounded wait
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    process.wait(timeout=120)
    return seen


def test_a_models_answer_cannot_drive_the_terminal(tmp_path: Path) -> None:
    shown = on_a_terminal(
        "run", str(CREW), "--model", "scripted", "-i", f"topic={HOSTILE}", cwd=str(tmp_path)
    )
    assert b"\x1b" not in shown and "\u202e".encode() not in shown
    assert SHOWN.encode() in shown


def test_a_pipe_gets_the_answer_as_it_is(tmp_path: Path) -> None:
    done = agentensemble_cli(
        "run", CREW, "--model", "scripted", "-i", f"topic={HOSTILE}", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert HOSTILE in done.stdout


def test_an_error_line_is_escaped_wherever_it_goes(tmp_path: Path) -> None:
    done = agentensemble_cli(
        "run", CREW, "--model", "scripted", "-i", "topic=a", "--session", HOSTILE, cwd=tmp_path
    )
    assert done.returncode == 2
    assert "\x1b" not in done.stderr and SHOWN in done.stderr


def test_eval_json_on_a_terminal_cannot_drive_it(tmp_path: Path) -> None:
    # the report holds every run's answer (here the input echoed) and the evaluators' reasons
    dataset = tmp_path / "dataset.json"
    case = {"name": "hostile", "inputs": {"topic": HOSTILE}, "evaluators": [{"Contains": "x"}]}
    dataset.write_text(json.dumps({"name": "hostile", "cases": [case]}))
    shown = on_a_terminal(
        "eval", str(CREW), str(dataset), "--model", "scripted", "--json", cwd=str(tmp_path)
    )
    assert b'"cases"' in shown  # the report was printed
    assert b"\x1b" not in shown and "\u202e".encode() not in shown


def test_durable_trace_on_a_terminal_cannot_drive_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a trace's fields are a model's text; JSON escapes C0 controls only: a bidi override and
    # a C1 CSI (U+009B) went to the terminal as they were
    from agentensemble.cli import _durable_actions
    from agentensemble.trace_model import ExecutionTrace

    trace = ExecutionTrace(
        run_id="r1", started_at=datetime.now(timezone.utc), workflow=f"\u202eevil\x9b2J{HOSTILE}"
    )

    class Client:
        def trace(self, run_id: str) -> ExecutionTrace:
            return trace

        def close(self) -> None:
            pass

    monkeypatch.setattr(_durable_actions, "_client", lambda database: Client())
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _durable_actions._trace(argparse.Namespace(out=None, database=None, run_id="r1"))
    shown = capsys.readouterr().out
    assert '"run_id":"r1"' in shown
    assert not {"\x1b", "\u202e", "\x9b"} & set(shown)
