"""The demo crew (examples/crew.yaml) served as an MCP tool, and called by an MCP client.

Run it with ``python examples/serve_mcp.py``. It starts ``agentensemble serve-mcp
examples/crew.yaml --model scripted`` as a subprocess over stdio (as Claude Desktop or an IDE
would), lists its tool, calls it with progress notifications, and stops it. The scripted model
needs no network; leave out ``--model scripted`` (and set OPENAI_API_KEY) for a real one.
See docs/serve.md.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

CREW = Path(__file__).with_name("crew.yaml")


async def main() -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentensemble", "serve-mcp", str(CREW), "--model", "scripted"],
    )
    async with Client(server) as client:
        (tool,) = (await client.list_tools()).tools
        print(f"Tool: {tool.name}({', '.join(tool.input_schema['properties'])})")
        print(tool.description)

        async def progress(value: float, total: float | None, message: str | None) -> None:
            print(f"  progress {value:.0f}/{total:.0f}: {message}")

        result = await client.call_tool(tool.name, {"topic": "tides"}, progress_callback=progress)
        print(f"Result: {result.content[0].text}")  # type: ignore[union-attr]
        missing = await client.call_tool(tool.name, {})
        print(f"Without its argument: is_error={missing.is_error}: {missing.content[0].text}")  # type: ignore[union-attr]


if __name__ == "__main__":
    asyncio.run(main())
