"""A stream is bounded as a whole, not only between lines: a server that keeps a stream alive
with SSE comments (or any line that is no data) and never sends an answer is cut off."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from _quiet_http import QuietHTTPServer

from agentensemble import LLM
from agentensemble.errors import LLMError
from agentensemble.llm import _litellm_stream
from agentensemble.llm.streaming import use_sink

pytestmark = pytest.mark.anyio


class KeepAliveForever(BaseHTTPRequestHandler):
    """Answers every stream with a comment line every 50 ms, for up to 20 s (a bounded loop)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        ends = time.monotonic() + 20
        try:
            while time.monotonic() < ends:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            return  # the client gave up: what the test wants

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def keep_alive_server() -> Iterator[str]:
    server = QuietHTTPServer(("127.0.0.1", 0), KeepAliveForever)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


class Sink:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    def text(self, piece: str) -> None:
        self.pieces.append(piece)

    def restarted(self, attempt: int) -> None:
        return


async def test_keep_alive_comments_do_not_hold_a_stream_open(
    keep_alive_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentensemble.llm import litellm_model

    monkeypatch.setattr(litellm_model, "_GUARD_SECONDS", 0.0)
    llm = LLM(
        "openai/test-model",
        api_base=keep_alive_server,
        api_key="sk-test-keepalive-1",
        timeout=0.5,
        max_retries=0,
    )
    sink = Sink()
    started = time.monotonic()
    with use_sink(sink), pytest.raises(LLMError, match="no data for"):
        await llm.complete([{"role": "user", "content": "hello"}])
    assert time.monotonic() - started < 15  # cut after ~0.5 s of comments, not the server's 20 s
    assert sink.pieces == []


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        # (seconds since start at each read, data arrived before it?) -> first failure or None
        ([(0.0, False), (0.4, True), (0.8, True)], None),
        ([(0.0, False), (0.6, False)], "no data for"),
        ([(0.0, False), (0.4, True), (0.8, True), (1.2, True), (5.1, True)], "went on for"),
    ],
)
def test_the_stream_deadline(
    steps: list[tuple[float, bool]], expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [100.0]
    monkeypatch.setattr(_litellm_stream.time, "monotonic", lambda: now[0])
    deadline = _litellm_stream.StreamDeadline(0.5)  # ends after 10 x 0.5 s
    failure = None
    for at, progressed in steps:
        now[0] = 100.0 + at
        if progressed:
            deadline.progressed()
        try:
            assert 0 < deadline.left() <= 0.5
        except TimeoutError as error:
            failure = str(error)
            break
    assert (failure is None) if expected is None else (expected in str(failure))
