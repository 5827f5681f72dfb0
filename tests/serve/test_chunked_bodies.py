"""A chunked request body (no ``Content-Length``) larger than the limit, sent to the real
servers (``serve-mcp --http`` and ``serve-a2a`` as subprocesses): refused with 413 once the
limit is passed, the server's memory bounded (it does not keep what it refuses), and it goes on
serving."""

from __future__ import annotations

import select
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from serve_helpers import crew_file, model_env, serving_process

from agentensemble.testing import OpenAICompatibleServer

LIMIT = 256 * 1024  # --max-body
SENT_AT_MOST = 32 * 1024 * 1024  # what a hostile client offers: 128 times the limit
CHUNK = b"x" * (64 * 1024)
MCP_HEADERS = "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"


def _rss_kib(process: subprocess.Popen[bytes]) -> int:
    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _send_chunked(base: str, path: str, extra_headers: str) -> tuple[int, int]:
    """POST chunks until the server answers (or ``SENT_AT_MOST``); (status, bytes sent)."""
    address = urlsplit(base)
    assert address.hostname is not None and address.port is not None
    sent = 0
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {address.netloc}\r\n{extra_headers}"
            "Transfer-Encoding: chunked\r\n\r\n"
        )
        sock.sendall(head.encode())
        try:
            while sent < SENT_AT_MOST:
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:  # the server answered: stop offering more
                    break
                sock.sendall(f"{len(CHUNK):x}\r\n".encode() + CHUNK + b"\r\n")
                sent += len(CHUNK)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass  # refused (closed, or no longer read): the answer may still be readable
        answer = b""
        try:
            while b"\r\n" not in answer:
                data = sock.recv(4096)
                if not data:
                    break
                answer += data
        except (ConnectionResetError, TimeoutError):
            pass
    status_line = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    assert status_line.startswith("HTTP/1.1 "), f"no answer: {answer[:200]!r}"
    return int(status_line.split()[1]), sent


@pytest.mark.parametrize(
    ("command", "path", "headers", "served_path"),
    [
        (["serve-mcp", "--http"], "/mcp", MCP_HEADERS, "/mcp"),
        (["serve-a2a"], "/", "Content-Type: application/json\r\n", "/.well-known/agent-card.json"),
    ],
    ids=["mcp-http", "a2a"],
)
def test_a_chunked_body_over_the_limit_is_refused_with_bounded_memory(
    tmp_path: Path, command: list[str], path: str, headers: str, served_path: str
) -> None:
    with OpenAICompatibleServer() as model:
        crew = str(crew_file(tmp_path))
        args = [command[0], crew, *command[1:], "--max-body", str(LIMIT)]
        with serving_process(args, model_env(model.base_url)) as (base, process):
            before = _rss_kib(process)
            status, sent = _send_chunked(base, path, headers)
            grown_kib = _rss_kib(process) - before
            with httpx.Client(timeout=10) as http:  # still serving
                after = http.get(base + served_path, headers={"Accept": "application/json"})
    assert status == 413
    assert sent < SENT_AT_MOST  # refused while the client was still sending
    assert grown_kib < 16 * 1024, f"the server grew by {grown_kib} KiB"
    assert after.status_code in (200, 400, 405, 406)  # answered, not crashed or hung
