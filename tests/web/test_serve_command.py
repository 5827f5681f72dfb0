"""``agentensemble serve``: binds 127.0.0.1, prints a login address whose token works once typed
into a browser, and the console answers nothing without it."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
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


def test_serve_prints_a_login_url_that_logs_in(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1", AGENTENSEMBLE_WEB_TOKEN="tok-for-this-test")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentensemble",
            "serve",
            "--port",
            "0",
            "--db",
            str(tmp_path / "db"),
        ],
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
            answer = client.get(login, follow_redirects=False)
            assert answer.status_code == 303
            key = {"X-Session-Key": answer.headers["location"].split("#key=", 1)[1]}
            assert client.get(f"{base}/api/runs", headers=key).json()["runs"] == []
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_stopping_serve_with_pages_open_is_quick_and_prints_no_traceback(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1", AGENTENSEMBLE_WEB_TOKEN="tok-stop")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentensemble",
            "serve",
            "--port",
            "0",
            "--db",
            str(tmp_path / "db"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=env,
    )
    assert process.stdout is not None
    line = ""
    while "open in a browser:" not in line:
        line = process.stdout.readline()
        assert line, "serve ended before printing its address"
    login = line.split("open in a browser:", 1)[1].strip()
    base = login.split("/login", 1)[0]
    streaming = threading.Event()
    polling = threading.Event()
    api = httpx.Client(timeout=30.0, headers={"Authorization": "Bearer tok-stop"})
    page = httpx.Client(timeout=30.0)
    key = page.get(login, follow_redirects=False).headers["location"].split("#key=", 1)[1]

    def watch() -> None:  # an open page's live stream
        headers = {"X-Session-Key": key}
        with (
            contextlib.suppress(httpx.HTTPError),
            page.stream("GET", f"{base}/api/stream", headers=headers) as a,
        ):
            streaming.set()
            for _line in a.iter_lines():
                pass

    def wait_for_decision() -> None:  # a review handler's long poll
        api.post(f"{base}/api/reviews", json={"request": {"id": "r", "timing": "after_execution"}})
        polling.set()
        with contextlib.suppress(httpx.HTTPError):
            api.get(f"{base}/api/reviews/r", params={"wait": "30"})

    for target in (watch, wait_for_decision):
        threading.Thread(target=target, daemon=True).start()
    assert streaming.wait(10) and polling.wait(10)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=15)
    assert process.returncode == 0
    assert "Traceback" not in err and "Error" not in err, err


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
