"""A hostile MCP server's tool listing: what it lists rides along in every request to the
model, so it is bounded and cleaned before any model sees it. The server is real, in its own
process (``mcp_hostile_listing_server.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agentensemble import Agent, Ensemble, Task
from agentensemble.mcp import MCPServerError, MCPServerStdio
from agentensemble.mcp.tool import MAX_SCHEMA_CHARS, MAX_TOOLS, object_schema
from agentensemble.testing import ScriptedChatModel

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("mcp_hostile_listing_server.py")
SECRET = "tok-Zq8v1-listing-secret-value"


def hostile(mode: str, **options: object) -> MCPServerStdio:
    return MCPServerStdio(
        sys.executable, [str(SERVER), mode], env={"HOSTILE_SECRET": SECRET}, **options
    )  # type: ignore[arg-type]


async def tool_specs(server: MCPServerStdio) -> list[dict[str, object]]:
    """The tool specs the model receives in its first request of a one-task run."""
    model = ScriptedChatModel(["done"])
    agent = Agent(role="Clerk", goal="Use the tools", tools=[server], llm=model)
    await Ensemble(tasks=[Task(description="Go", agent=agent)]).arun()
    return [spec["function"] for spec in model.requests[0].tools or []]  # type: ignore[misc]


async def test_a_listing_of_thousands_of_tools_is_refused_and_include_picks_the_needed() -> None:
    """3,000 tools were all given to the agent: 700 kB of specs in every model request."""
    with pytest.raises(MCPServerError) as caught:
        await tool_specs(hostile("many"))
    message = str(caught.value)
    assert f"lists 3000 tools; at most {MAX_TOOLS}" in message and "include=" in message
    specs = await tool_specs(hostile("many", include=["echo_7", "echo_2999"]))
    assert [spec["name"] for spec in specs] == ["echo_7", "echo_2999"]


async def test_a_huge_input_schema_is_refused_naming_the_tool_and_exclude_leaves_it_out() -> None:
    """A 2 MB parameter description went into every request to the model."""
    with pytest.raises(MCPServerError) as caught:
        await tool_specs(hostile("big-schema"))
    message = str(caught.value)
    assert "tool 'lookup' has an input schema of" in message
    assert f"at most {MAX_SCHEMA_CHARS}" in message and "exclude=['lookup']" in message
    assert len(message) < 1_000
    specs = await tool_specs(hostile("big-schema", exclude=["lookup"]))
    assert [spec["name"] for spec in specs] == ["echo"]


async def test_a_description_s_hidden_instructions_and_echoed_secret_never_reach_the_model() -> (
    None
):
    """Instructions in Unicode tag characters (invisible to whoever reads the listing) and a
    secret the server was given in its environment went to the model as they were."""
    (spec,) = await tool_specs(hostile("hidden"))
    sent = json.dumps(spec, ensure_ascii=False)
    assert SECRET not in sent
    assert not any(0xE0000 <= ord(c) <= 0xE007F or c == "\u200b" for c in sent)
    assert spec["description"] == "Echo the text back.hidden (token ***)"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {"properties": {"q": {"type": "string", "description": "Query\u200b\U000e0041"}}},
            {"type": "object", "properties": {"q": {"type": "string", "description": "Query"}}},
        ),
        (  # names, patterns and enums are the server's contract: left as written
            {"properties": {"title": {"enum": ["a\u200bb"], "title": f"T {SECRET}"}}},
            {"type": "object", "properties": {"title": {"enum": ["a\u200bb"], "title": "T ***"}}},
        ),
        ({"$defs": {"d": {"description": ["not text"]}}}, None),
    ],
)
def test_schema_texts_are_cleaned_like_the_description(
    schema: dict[str, object], expected: dict[str, object] | None
) -> None:
    from agentensemble.redaction import register_secret

    register_secret(SECRET)
    cleaned = object_schema(schema)
    if expected is None:  # anything that is not a text is kept
        assert cleaned == {**schema, "type": "object", "properties": {}}
    else:
        assert cleaned == expected
