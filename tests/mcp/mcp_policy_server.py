"""A real MCP server (stdio) whose tools are slow, slow once, or count the calls running at
once: for the tool policy of MCP tools (tests/mcp/test_mcp_tool_policy.py)."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("agentensemble-policy-test")
state = {"slow_once_calls": 0, "running": 0, "peak": 0}


@server.tool()
async def sleep(seconds: float) -> str:
    """Answer after ``seconds``."""
    await anyio.sleep(seconds)
    return f"slept {seconds:g} s"


@server.tool()
async def slow_once() -> str:
    """Never answers the first call (it waits an hour); answers every later one at once."""
    state["slow_once_calls"] += 1
    if state["slow_once_calls"] == 1:
        await anyio.sleep(3600)
    return f"answered call {state['slow_once_calls']}"


@server.tool()
async def gather(together: int, patience: float) -> str:
    """Wait (at most ``patience`` s) until ``together`` calls of this tool have run at once; say the
    most seen."""
    state["running"] += 1
    state["peak"] = max(state["peak"], state["running"])
    try:
        with anyio.move_on_after(patience):
            while state["peak"] < together:
                await anyio.sleep(0.01)
        return f"peak {state['peak']}"
    finally:
        state["running"] -= 1


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run()
