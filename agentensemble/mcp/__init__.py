"""MCP servers as tool sources (extra ``agentensemble-py[mcp]``).

``MCPServerStdio`` runs a server as a subprocess; ``MCPServerHTTP`` connects to one over
streamable HTTP (or SSE). Put either in ``tools=[...]``: the run starts it once, lists its tools,
and closes it at the end. The ``mcp`` package itself is imported only when a run starts one.
Each server also offers its resources and prompts (``list_resources``, ``read_resource``,
``list_prompts``, ``get_prompt``), and answers a server's sampling and elicitation requests
through the run's review handler.
"""

from agentensemble.mcp._connection import MCPServerError
from agentensemble.mcp._content import (
    MCPPrompt,
    MCPPromptArgument,
    MCPPromptMessage,
    MCPPromptResult,
    MCPResource,
    MCPResourceContent,
)
from agentensemble.mcp.server import MCPServerHTTP, MCPServerStdio
from agentensemble.mcp.tool import MCPTool

__all__ = [
    "MCPPrompt",
    "MCPPromptArgument",
    "MCPPromptMessage",
    "MCPPromptResult",
    "MCPResource",
    "MCPResourceContent",
    "MCPServerError",
    "MCPServerHTTP",
    "MCPServerStdio",
    "MCPTool",
]
