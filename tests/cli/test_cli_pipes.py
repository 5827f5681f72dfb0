"""``agentensemble ... | head``: a reader that stops early ends the command quietly (exit 0, no
``BrokenPipeError`` traceback), for every command: it is handled once, in ``cli.main``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import agentensemble
from agentensemble.memory import SQLiteMemory

REPO_ROOT = Path(agentensemble.__file__).absolute().parent.parent


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path) -> None:
    store = SQLiteMemory(tmp_path / "memory.sqlite")
    for n in range(2_000):  # far more than a pipe's buffer: the writer meets the closed pipe
        store.add("notes", f"note {n}: " + "words " * 40)
    store.close()
    command = [sys.executable, "-m", "agentensemble", "memory", "list", "notes"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    with subprocess.Popen(
        [*command, "--store", str(tmp_path / "memory.sqlite")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()  # what `head -1` reads, then it goes away
        process.stdout.close()
        errors = process.stderr.read().decode()
        code = process.wait(timeout=120)
    assert first.startswith(b"")
    assert b"note 0:" in first
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors
    assert code == 0
