"""An MCP server's image and binary-resource results reach the model as attachments (not as a
sentence); hostile image content (not base64, not an image) is described, never sent. The
server is a real process over stdio (``mcp_image_server.py``)."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentensemble import Agent, Ensemble, Image, Task
from agentensemble.attachments import MAX_ATTACHMENT_BYTES
from agentensemble.llm._messages import outgoing
from agentensemble.llm.types import ATTACHMENTS_KEY
from agentensemble.mcp import MCPServerStdio
from agentensemble.mcp.tool import result_from_mcp
from agentensemble.testing import ScriptedChatModel, tool_call

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("mcp_image_server.py")
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)


async def run_tool(name: str) -> ScriptedChatModel:
    model = ScriptedChatModel([tool_call(name), "done"])
    server = MCPServerStdio(sys.executable, [str(SERVER)])
    agent = Agent(role="Browser", goal="Look at pages", tools=[server], llm=model)
    await Ensemble(tasks=[Task(description="Look", agent=agent)]).arun()
    return model


async def test_an_mcp_screenshot_reaches_the_model_as_an_image_part() -> None:
    model = await run_tool("screenshot")

    tool_message = model.requests[1].messages[-1]
    assert tool_message["content"] == "[attachment: image 1]"
    (image,) = tool_message[ATTACHMENTS_KEY]
    assert image == Image(data=base64.b64decode(PNG_B64)).named("image 1")
    sent = outgoing(model.requests[1].messages, "openai")
    assert sent[-1]["role"] == "user"
    assert sent[-1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG_B64}"},
    }


async def test_an_embedded_pdf_resource_reaches_the_model_as_a_document() -> None:
    model = await run_tool("report")

    tool_message = model.requests[1].messages[-1]
    assert tool_message["content"] == "The Q3 report:\n\n[attachment: q3.pdf]"
    (document,) = tool_message[ATTACHMENTS_KEY]
    assert (document.kind, document.media_type) == ("document", "application/pdf")


async def test_hostile_image_content_is_described_not_sent() -> None:
    model = await run_tool("broken_image")

    tool_message = model.requests[1].messages[-1]
    assert ATTACHMENTS_KEY not in tool_message
    first, second = tool_message["content"].split("\n\n")
    assert first.startswith("[image image/png: not shown (")
    assert second.startswith(
        "[image application/x-msdownload: not shown (Image cannot hold 'application/x-msdownload'"
    )


def test_a_resource_link_is_never_read() -> None:
    link = SimpleNamespace(type="resource_link", uri="file:///etc/passwd")
    result = result_from_mcp(SimpleNamespace(content=[link]))
    assert (result.output, result.attachments) == ("[resource file:///etc/passwd]", ())


def test_an_image_over_the_bound_is_refused_before_decoding() -> None:
    huge = "A" * (MAX_ATTACHMENT_BYTES * 4 // 3 + 8)  # valid base64, 20 MiB and more decoded
    item = SimpleNamespace(type="image", data=huge, mime_type="image/png")
    result = result_from_mcp(SimpleNamespace(content=[item]))
    assert result.output == "[image image/png: over the attachment size bound]"
    assert result.attachments == ()


def test_a_resource_s_name_is_printable_and_bounded() -> None:
    blob = SimpleNamespace(
        uri="file:///r/" + "\x1b[31m" + "n" * 200 + ".pdf",
        mime_type="application/pdf",
        blob=base64.b64encode(b"%PDF-1.4\n").decode(),
    )
    result = result_from_mcp(
        SimpleNamespace(content=[SimpleNamespace(type="resource", resource=blob)])
    )
    (document,) = result.attachments
    assert (
        document.label == "[31m" + "n" * 76 and result.output == f"[attachment: {document.label}]"
    )
