"""Helpers for the serve tests: crew files on the local OpenAI-compatible server, and the
``agentensemble serve-*`` commands as subprocesses with bounded waits."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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
    with serving_process(args, env) as (base, _):
        yield base


@contextmanager
def serving_process(
    args: list[str], env: dict[str, str]
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``serving``, yielding the process too (its pid, its memory)."""
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
        yield match.group(1).rstrip("/"), process
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


class FakeRemote:
    """A scripted A2A agent on 127.0.0.1: serves ``card`` and answers every call with
    ``answer`` (a SendMessage result); records the requests it got. ``raw_card`` and
    ``raw_answer`` (with their ``*_headers``) send bytes of a hostile remote's choosing."""

    def __init__(self) -> None:
        self.card: dict[str, Any] = {}
        self.answer: dict[str, Any] = {}
        self.raw_card: bytes | None = None
        self.raw_answer: bytes | None = None
        self.card_headers: dict[str, str] = {}
        self.answer_headers: dict[str, str] = {}
        self.posts: list[dict[str, Any]] = []
        remote = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                card = remote.raw_card or json.dumps(remote.card).encode()
                self._reply(card, remote.card_headers)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                remote.posts.append(body)
                if remote.raw_answer is not None:
                    self._reply(remote.raw_answer, remote.answer_headers)
                    return
                reply = {"jsonrpc": "2.0", "id": body["id"], "result": remote.answer}
                self._reply(json.dumps(reply).encode())

            def _reply(self, data: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(200)
                headers = {"Content-Type": "application/json", **(headers or {})}
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.point_at(self.url)

    def point_at(self, url: str, *, streaming: bool = False) -> None:
        self.card = {
            "name": "remote",
            "description": "a remote agent",
            "version": "1",
            "supportedInterfaces": [
                {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": streaming},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        }

    def answers(self, state: str, text: str, *, message: str | None = None) -> None:
        task: dict[str, Any] = {"id": "t1", "contextId": "c1", "status": {"state": state}}
        if message is not None:
            task["status"]["message"] = {
                "messageId": "m1",
                "role": "ROLE_AGENT",
                "parts": [{"text": message}],
            }
        if text:
            task["artifacts"] = [{"artifactId": "a1", "parts": [{"text": text}]}]
        self.answer = {"task": task}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def hardened_serving(app: Any, **settings: Any) -> Iterator[int]:
    """``app`` served by ``hardened_server`` on a free 127.0.0.1 port in a thread (the port is
    yielded once it accepts connections); stopped and joined on exit."""
    from agentensemble.serve._hardened import hardened_server

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    server = hardened_server(app, log_level="critical", **settings)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    try:
        yield listener.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(30)
        listener.close()
