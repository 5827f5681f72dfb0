"""``agentensemble serve``: binds 127.0.0.1, prints a login address whose token works once typed
into a browser, and the console answers nothing without it."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from agentensemble.cli import build_parser

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_serve_is_a_subcommand_binding_loopback_by_default() -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port) == ("127.0.0.1", 8766)


def test_serve_prints_a_login_url_that_logs_in() -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1", AGENTENSEMBLE_WEB_TOKEN="tok-for-this-test")
    process = subprocess.Popen(
        [sys.executable, "-m", "agentensemble", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    try:
        url = ""
        while "open in a browser:" not in url:
            url = lines.get(timeout=30)
        login = url.split("open in a browser:", 1)[1].strip()
        assert login.startswith("http://127.0.0.1:") and login.endswith("?token=tok-for-this-test")
        base = login.split("/login", 1)[0]
        with httpx.Client(timeout=10.0) as client:
            assert client.get(f"{base}/api/runs").status_code == 401
            assert client.get(login, follow_redirects=False).status_code == 303
            assert client.get(f"{base}/api/runs").json() == {"runs": []}
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_neither_the_library_nor_the_cli_loads_the_web_extra() -> None:
    code = (
        "import sys, agentensemble, agentensemble.cli; agentensemble.cli.build_parser(); "
        "print([m for m in ('agentensemble_web', 'starlette', 'uvicorn') if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_serve_without_the_web_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentensemble.cli import EXIT_USAGE, main

    monkeypatch.setitem(sys.modules, "agentensemble_web.server", None)  # as if not installed
    assert main(["serve", "--port", "0"]) == EXIT_USAGE
    assert 'pip install "agentensemble-py[web]"' in capsys.readouterr().err
