"""An HTTP MCP server's JSON answer is read to a bound: the SDK read it whole, however large.
The server is real, in its own process, on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import serve_script

from agentensemble.errors import ToolExecutionError
from agentensemble.mcp import MCPServerHTTP, _http_limits

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("mcp_hostile_listing_server.py")


@pytest.fixture(scope="module")
def huge_http() -> Iterator[str]:
    yield from serve_script(SERVER, "huge-http")


async def test_an_answer_past_the_bound_fails_its_call_saying_why_and_the_next_call_works(
    huge_http: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_http_limits, "MAX_RESPONSE_BYTES", 1_000_000)
    connection = await MCPServerHTTP(huge_http, timeout=60).open()
    try:
        tools = {tool.name: tool for tool in connection.tools}
        with pytest.raises(ToolExecutionError) as caught:
            await tools["huge"].ado_execute({"megabytes": 3})
        assert "the server's answer is over 1000000 bytes; it was not read" in str(caught.value)
        fine = await tools["huge"].ado_execute({"megabytes": 0.3})  # under the bound: read
        assert fine.output.startswith("xxx")
        echoed = await tools["echo"].ado_execute({"text": "still here"})
        assert echoed.output == "still here"
    finally:
        await connection.close()


async def test_the_environment_s_proxy_is_still_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is a response hook, not a transport of ours: an ``httpx2`` client given a
    transport ignores ``HTTP_PROXY`` / ``HTTPS_PROXY``, so users behind a proxy lost their MCP
    servers without a word. The proxy here is a recorder on 127.0.0.1 that sees the request."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.path)  # a proxy is sent the whole URL
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    try:
        with pytest.raises(Exception):  # noqa: B017  (the recorder speaks no MCP)
            await MCPServerHTTP("http://mcp.invalid/mcp", timeout=10).open()
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert seen and seen[0] == "http://mcp.invalid/mcp"
