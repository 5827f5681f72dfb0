"""Helpers for the MCP tests: the test server's path, free loopback ports, HTTP servers in a
subprocess with bounded waits, and a PID check."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

SERVER = Path(__file__).with_name("mcp_test_server.py")
STARTUP_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    """Until the server accepts connections; fails if it exits or takes over 30 s."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"test MCP server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("test MCP server did not listen within 30 s")


def serve(transport: str) -> Iterator[str]:
    yield from serve_script(SERVER, transport)


def serve_script(script: Path, mode: str, *extra: str) -> Iterator[str]:
    """Serve ``script`` (``python script MODE PORT EXTRA...``) on 127.0.0.1; yield its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(script), mode, str(port), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/" + ("sse" if mode == "sse" else "mcp")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie awaiting its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return True
    return status != "Z"
