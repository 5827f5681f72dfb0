"""Numbers on the command line, bounded on both sides: a port past 65535, a count past what
SQLite holds, a repeat past what memory holds, ``nan`` days. Each was a traceback (``bind``'s
``OverflowError``, SQLite's, a ``MemoryError``) or was taken; each is now argparse's usage
line and one error naming the option and its range, exit 2, before anything starts."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_bad_files import CREW, REPO_ROOT, agentensemble_cli, one_line

from agentensemble.memory.sqlite import SQLiteMemory

HUGE = "99999999999999999999"
DATASET = REPO_ROOT / "examples" / "evals" / "dataset.yaml"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("serve", "--port", "99999", "--db", ":memory:"), "--port must be from 0 to 65535"),
        (("serve", "--port", "-5", "--db", ":memory:"), "--port must be from 0 to 65535"),
        (("serve", "--keep-days", "nan", "--db", ":memory:"), "--keep-days must be more than 0"),
        (("serve", "--keep-days", "1e308", "--db", ":memory:"), "--keep-days must be more than"),
        (("serve", "--keep-runs", HUGE, "--db", ":memory:"), "--keep-runs must be at most"),
        (("serve-api", CREW, "--port", "99999"), "--port must be from 0 to 65535"),
        (("serve-a2a", CREW, "--port", "70000"), "--port must be from 0 to 65535"),
        (("serve-api", CREW, "--port", "0", "--max-body", "-1"), "--max-body must be from 1"),
        (("serve-mcp", CREW, "--http", "--max-body", HUGE), "--max-body must be from 1"),
        (("eval", CREW, DATASET, "--model", "scripted", "--repeat", HUGE), "--repeat must be"),
        (("eval", CREW, DATASET, "--max-concurrency", HUGE), "--max-concurrency must be"),
        (("memory", "list", "s", "--store", "m.sqlite", "--last", HUGE), "--last must be"),
        (("memory", "search", "s", "q", "--store", "m.sqlite", "--limit", HUGE), "--limit must"),
        (("memory", "prune", "s", "--store", "m.sqlite", "--keep-last", HUGE), "--keep-last must"),
        (("durable", "prune", "--keep-last", HUGE), "--keep-last must be at most"),
        (("durable", "fork", "run-1", "--from-task", HUGE), "--from-task must be at most"),
        (("serve", "--port", "eighty", "--db", ":memory:"), "--port takes a whole number"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(map(str, value))[:60],
)
def test_a_number_out_of_range_is_a_usage_error_naming_the_option(
    tmp_path: Path, args: tuple[str | Path, ...], named: str
) -> None:
    store = SQLiteMemory(str(tmp_path / "m.sqlite"))
    store.add("s", "hello")
    store.close()
    done = agentensemble_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert named in one_line(done)


def test_the_review_server_refuses_a_bad_port_or_one_in_use_in_one_line() -> None:
    def review_server(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentensemble_review.server", *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO_ROOT,
        )

    too_high = review_server("--port", "99999")
    assert too_high.returncode == 2 and "--port must be from 0 to 65535" in one_line(too_high)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        in_use = review_server("--port", str(taken.getsockname()[1]))
    assert in_use.returncode == 2
    assert "cannot listen on 127.0.0.1:" in one_line(in_use)


@pytest.mark.parametrize(
    "command",
    [("serve-api",), ("serve-a2a",), ("serve-ag-ui",), ("serve-mcp", "--http")],
    ids=lambda command: command[0],
)
def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path, command: tuple[str, ...]) -> None:
    """uvicorn logged "ERROR: [Errno 98] ..." and exited 3 (its startup failure), a code the
    command documents nowhere."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = agentensemble_cli(command[0], CREW, *command[1:], "--port", port, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in one_line(done)
