"""Helpers shared by the review tests (a plain module: the tests directory is no package)."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from _quiet_http import QuietHTTPServer

import agentensemble_review

# The checkout whose package this process imported: child Pythons must import the same one.
REPO_ROOT = Path(agentensemble_review.__file__).absolute().parent.parent
PYTHON = sys.executable
SECRET = "test-secret"  # what the review_server fixture verifies signatures with


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def subprocess_env() -> dict[str, str]:
    """The environment for child Pythons: this checkout first on the import path."""
    env = dict(os.environ)
    paths = [str(REPO_ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Seen:
    """One HTTP request an ad-hoc server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Reply = tuple[int, dict[str, str], bytes]
Responder = Callable[[Seen], Reply]


def json_reply(status: int, data: object, headers: dict[str, str] | None = None) -> Reply:
    return (
        status,
        {"Content-Type": "application/json", **(headers or {})},
        json.dumps(data).encode(),
    )


@contextmanager
def adhoc_server(respond: Responder) -> Iterator[tuple[str, list[Seen]]]:
    """A real HTTP server on 127.0.0.1 whose every answer comes from ``respond``.

    Yields its base URL and the list of requests it saw, in order.
    """
    seen: list[Seen] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = Seen(
                self.command, self.path, dict(self.headers.items()), self.rfile.read(length)
            )
            seen.append(request)
            status, headers, body = respond(request)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _handle

    server = QuietHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextmanager
def silent_listener() -> Iterator[str]:
    """A socket that accepts connections (in the kernel backlog) but never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
