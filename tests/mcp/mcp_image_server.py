"""A real MCP server (the ``mcp`` package's MCPServer, over stdio) whose tools answer with images,
a PDF resource and hostile image content, for tests/mcp/test_mcp_images.py."""

from __future__ import annotations

import base64

from mcp.server.mcpserver import Image, MCPServer
from mcp.types import BlobResourceContents, EmbeddedResource, ImageContent, TextContent

server = MCPServer("agentensemble-image-test")

#: A 1x1 PNG (what a browser tool's screenshot looks like, small).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"


@server.tool()
def screenshot() -> Image:
    """A screenshot of the page."""
    return Image(data=PNG, format="png")


@server.tool()
def report() -> list[TextContent | EmbeddedResource]:
    """A caption and a PDF report as an embedded resource."""
    blob = BlobResourceContents(
        uri="file:///reports/q3.pdf",
        mime_type="application/pdf",
        blob=base64.b64encode(PDF).decode(),
    )
    return [
        TextContent(type="text", text="The Q3 report:"),
        EmbeddedResource(type="resource", resource=blob),
    ]


@server.tool()
def broken_image() -> list[ImageContent]:
    """Image content whose data is not base64 and whose type is not an image's."""
    return [
        ImageContent(type="image", data="!!not base64!!", mime_type="image/png"),
        ImageContent(
            type="image",
            data=base64.b64encode(b"MZ\x90\x00").decode(),
            mime_type="application/x-msdownload",
        ),
    ]


if __name__ == "__main__":
    server.run()
