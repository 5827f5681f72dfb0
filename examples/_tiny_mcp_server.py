"""A tiny MCP server for examples/mcp_tools.py, written with the ``mcp`` package's server class.

It speaks MCP over stdin/stdout; run ``python examples/mcp_tools.py``, which starts it.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima"}

server = MCPServer("tiny-geo")


@server.tool()
def capital_of(country: str) -> str:
    """The capital city of a country."""
    capital = CAPITALS.get(country.strip().lower())
    if capital is None:
        raise ToolError(f"unknown country {country!r}; known: {', '.join(sorted(CAPITALS))}")
    return capital


@server.tool(name="distance-km")
def distance_km(from_city: str, to_city: str) -> int:
    """Great-circle distance between two capitals, in whole kilometres."""
    table = {frozenset({"Paris", "Tokyo"}): 9712, frozenset({"Paris", "Nairobi"}): 6477}
    distance = table.get(frozenset({from_city, to_city}))
    if distance is None:
        raise ToolError(f"no distance known between {from_city} and {to_city}")
    return distance


if __name__ == "__main__":
    server.run()
