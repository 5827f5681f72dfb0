
from mcp.server.mcpserver import MCPServer

server = MCPServer("geo")

@server.tool()
def capital_of(country: str) -> str:
    "The capital city of a country."
    return {"kenya": "Nairobi", "peru": "Lima"}.get(country.lower(), "unknown")

server.run()
