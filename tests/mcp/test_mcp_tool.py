"""The pure parts of an MCP tool: safe names, the parameters schema, results as ToolResults."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from agentensemble.mcp.tool import exposed_name, object_schema, result_from_mcp
from agentensemble.tools import ToolResult


@pytest.mark.parametrize(
    ("remote", "prefix", "expected"),
    [
        ("add", None, "add"),
        ("read-file", None, "read_file"),
        ("fs.read file", "fs", "fs_fs_read_file"),
        ("", None, "tool"),
        ("ünïcode", "x", "x__n_code"),
        ("a" * 100, "p", "p_" + "a" * 62),
    ],
)
def test_exposed_names_follow_the_tool_name_rules(
    remote: str, prefix: str | None, expected: str
) -> None:
    assert exposed_name(remote, prefix) == expected


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (None, {"type": "object", "properties": {}}),
        ("not a schema", {"type": "object", "properties": {}}),
        (
            {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        ),
        ({"type": "array", "properties": []}, {"type": "object", "properties": {}}),
    ],
)
def test_the_parameters_schema_is_always_an_object(schema: Any, expected: Any) -> None:
    assert object_schema(schema) == expected


def text(value: str) -> SimpleNamespace:
    return SimpleNamespace(type="text", text=value)


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (SimpleNamespace(content=[text("a"), text("b")]), ToolResult.success("a\n\nb")),
        (
            SimpleNamespace(content=[], structured_content={"n": 1}),
            ToolResult.success('{"n": 1}', structured_output={"n": 1}),
        ),
        (
            SimpleNamespace(content=[text("3")], structured_content={"result": 3}),
            ToolResult.success("3", structured_output={"result": 3}),
        ),
        (SimpleNamespace(content=[text("no")], is_error=True), ToolResult.failure("no")),
        (
            SimpleNamespace(content=[], is_error=True),
            ToolResult.failure("the MCP tool reported an error without a message"),
        ),
        (
            SimpleNamespace(content=[SimpleNamespace(type="image", data="QUJD", mime_type="x/y")]),
            ToolResult.success("[image x/y: not shown (Image cannot hold 'x/y' (from its data))]"),
        ),
        (
            SimpleNamespace(
                content=[
                    SimpleNamespace(type="resource", resource=SimpleNamespace(text="doc", uri="u")),
                    SimpleNamespace(type="resource_link", uri="file:///a"),
                    SimpleNamespace(type="weird"),
                ]
            ),
            ToolResult.success("doc\n\n[resource file:///a]\n\n[weird content]"),
        ),
    ],
)
def test_server_results_become_tool_results(result: Any, expected: ToolResult) -> None:
    assert result_from_mcp(result) == expected


def test_a_huge_result_is_cut_and_says_so() -> None:
    result = result_from_mcp(SimpleNamespace(content=[text("x" * 20)]), max_chars=10)
    assert result == ToolResult.success("x" * 10 + "\n[output cut at 10 characters]")


@pytest.mark.parametrize(
    ("content", "output"),
    [
        ([text("x" * 20)], "x" * 10 + "\n[output cut at 10 characters]"),
        ([], '{"result":' + "\n[output cut at 10 characters]"),
    ],
    ids=["with-text", "structured-only"],
)
def test_huge_structured_content_is_not_kept_whole_in_the_records(
    content: list[Any], output: str
) -> None:
    """The text was cut, but the server's structured content (a str result is there a second
    time) was kept whole as structured_output: a 5 MB result made a 5 MB saved output."""
    result = result_from_mcp(
        SimpleNamespace(content=content, structured_content={"result": "x" * 20}), max_chars=10
    )
    assert result == ToolResult.success(output, structured_output=None)


def test_bad_inputs_fail_before_any_mcp_server_starts() -> None:
    from agentensemble import Agent, Ensemble, PromptTemplateError, Task
    from agentensemble.mcp import MCPServerStdio
    from agentensemble.testing import ScriptedChatModel

    never = MCPServerStdio("/nonexistent/agentensemble-test-server")  # starting it would fail
    agent = Agent(role="R", goal="Answer about {topic}", tools=[never], llm=ScriptedChatModel([]))
    ensemble = Ensemble(tasks=[Task(description="About {topic}", agent=agent)])
    with pytest.raises(PromptTemplateError, match="topic"):
        ensemble.run({})
