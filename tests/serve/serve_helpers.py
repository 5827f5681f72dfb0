"""Helpers for the serve tests: crew files on the local OpenAI-compatible server, and the
``agentensemble serve-*`` commands as subprocesses with bounded waits."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STARTUP_SECONDS = 30.0
KEY = "sk-serve-e2e-secret-key"
AGENTENSEMBLE = [sys.executable, "-m", "agentensemble"]

CREW = """\
model: openai/test-model
agents:
  writer:
    role: Writer
    goal: Explain {topic} plainly
tasks:
  research:
    description: Research {topic}.
    expected_output: Three facts.
    agent: writer
  write:
    description: Write about {topic}.
    expected_output: A paragraph.
    agent: writer
    context: [research]
"""


def crew_file(directory: Path, text: str = CREW, name: str = "writer.yaml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def model_env(base_url: str, **extra: str) -> dict[str, str]:
    """The environment of a served crew: its model calls go to the local server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTENSEMBLE_"))}
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY=KEY, **extra)
    return env


@contextmanager
def serving(args: list[str], env: dict[str, str]) -> Iterator[str]:
    """Start ``agentensemble ARGS`` (an HTTP server on port 0) and yield its base URL, read
    from the address it prints on stderr; stopped (SIGTERM, then kill) afterwards."""
    process = subprocess.Popen(
        [*AGENTENSEMBLE, *args, "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            lines.append(raw.decode(errors="replace"))
            if " on http://" in lines[-1]:
                found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not found.wait(0.05):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {''.join(lines)}")
        match = re.search(r" on (http://\S+)", "".join(lines))
        assert match is not None
        yield match.group(1).rstrip("/")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
