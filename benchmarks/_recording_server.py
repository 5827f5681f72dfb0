"""The recording server the concurrency benchmarks talk to, in a process of its own: an
OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1 that answers the one-tool job (a tool
call, then the final text once the tool's result is in the history) after a fixed delay, and
counts what it was sent (``GET /stats``: requests, tool calls, answers, bytes, the most requests
in flight at once). Used by ``concurrency.py`` and ``evals_concurrency.py``; run as
``python benchmarks/_recording_server.py DELAY`` by ``RecordingServer``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request
from typing import Any


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    """A tool call first, the final text once the tool's result is in the history."""
    messages = body.get("messages") or [{}]
    if messages[-1].get("role") == "tool":
        message: dict[str, Any] = {"role": "assistant", "content": "Lyon is in France."}
        finish = "stop"
    else:
        call = {
            "id": "call_lookup_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"city": "Lyon"}'},
        }
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "test-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


def _http(status: str, data: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
    return head.encode() + b"\r\n\r\n" + data


async def serve(delay: float) -> None:
    stats = {"requests": 0, "tool_calls": 0, "answers": 0, "bytes": 0, "peak_in_flight": 0}
    in_flight = 0

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                raw = await reader.readexactly(length)
                if head.startswith(b"GET /stats"):
                    writer.write(_http("200 OK", json.dumps(stats).encode()))
                    await writer.drain()
                    continue
                answer = _answer(json.loads(raw))
                stats["requests"] += 1
                stats["bytes"] += length
                kind = answer["choices"][0]["finish_reason"]
                stats["tool_calls" if kind == "tool_calls" else "answers"] += 1
                in_flight += 1
                stats["peak_in_flight"] = max(stats["peak_in_flight"], in_flight)
                try:
                    await asyncio.sleep(delay)
                finally:
                    in_flight -= 1
                writer.write(_http("200 OK", json.dumps(answer).encode()))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client hung up, or we are shutting down
        finally:
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until stdin closes
    server.close()


class RecordingServer:
    """The server process: ``base_url``, ``stats()``; ends when the ``with`` block does."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def __enter__(self) -> RecordingServer:
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(self.delay)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        if not self.base_url.startswith("http://"):
            raise RuntimeError(f"the recording server did not start: {self.base_url!r}")
        return self

    def stats(self) -> dict[str, int]:
        url = self.base_url.removesuffix("/v1") + "/stats"
        with urllib.request.urlopen(url, timeout=30) as answer:
            result: dict[str, int] = json.loads(answer.read())
            return result

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1])))
