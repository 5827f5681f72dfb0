"""A minimal OpenAI-compatible server for throughput benchmarks: every answer after a fixed delay.

The test server (``tests/e2e/openai_server.py``) is built for scripting and faults, on threads;
under 50 concurrent connections it, not the client, becomes the limit. This one is a bare asyncio
HTTP/1.1 keep-alive loop in its own process (``python benchmarks/latency_server.py DELAY``):
it reads a request, sleeps ``DELAY`` seconds without blocking other connections, and answers
one fixed chat completion. It prints its base URL, then serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys

ANSWER = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3},
    }
).encode()
RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    + str(len(ANSWER)).encode()
    + b"\r\n\r\n"
    + ANSWER
)


async def serve(delay: float) -> None:
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                await asyncio.sleep(delay)
                writer.write(RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client hung up, or we are shutting down
        finally:
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    server.close()


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0.0))
