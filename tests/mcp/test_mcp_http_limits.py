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
