"""MCP servers as tool sources (extra ``agentensemble-py[mcp]``).

``MCPServerStdio`` runs a server as a subprocess; ``MCPServerHTTP`` connects to one over
streamable HTTP (or SSE). Put either in ``tools=[...]``: the run starts it once, lists its tools,
and closes it at the end. The ``mcp`` package itself is imported only when a run starts one.
"""

from agentensemble.mcp._connection import MCPServerError
from agentensemble.mcp.server import MCPServerHTTP, MCPServerStdio
from agentensemble.mcp.tool import MCPTool

__all__ = ["MCPServerError", "MCPServerHTTP", "MCPServerStdio", "MCPTool"]
