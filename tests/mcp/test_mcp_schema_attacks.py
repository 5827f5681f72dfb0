"""A hostile MCP server's input schema is data: its references are never fetched or read, and
its regexes never run unbounded against the model's arguments."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentensemble.mcp.tool import MCPTool

pytest.importorskip("jsonschema")
pytest.importorskip("regex")

BOUND = 30.0  # a safety bound on a hang, not a speed target: the attacks took hours or forever


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # a server that never answers: it only records the fetch
        self.hits.append(self.path)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[str]:
    _Counting.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def mcp_tool(schema: dict[str, Any]) -> tuple[MCPTool, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        sent.append(arguments)
        return None

    tool = MCPTool(
        name="t", remote_name="t", description="", input_schema=schema, call=call, origin="test"
    )
    return tool, sent


def run_bounded(tool: MCPTool, arguments: dict[str, Any]) -> Any:
    outcome: list[Any] = []
    thread = threading.Thread(
        target=lambda: outcome.append(tool.execute(json.dumps(arguments))), daemon=True
    )
    thread.start()
    thread.join(BOUND)
    assert outcome, f"the argument check still runs after {BOUND} s"
    return outcome[0]


def test_a_remote_reference_is_never_fetched(listener: str) -> None:
    schema = {"type": "object", "properties": {"q": {"$ref": f"{listener}/schema.json"}}}
    tool, sent = mcp_tool(schema)

    result = run_bounded(tool, {"q": "x"})

    assert _Counting.hits == []
    assert result.is_success and sent == [{"q": "x"}]  # not checked here: the server checks


def test_a_reference_through_a_remote_id_is_never_fetched(listener: str) -> None:
    schema = {
        "$id": f"{listener}/root.json",
        "type": "object",
        "properties": {"q": {"$ref": "other.json"}},
    }
    tool, _ = mcp_tool(schema)
    run_bounded(tool, {"q": "x"})
    assert _Counting.hits == []


def test_a_file_reference_is_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "schema.json"
    secret.write_text('{"type": "integer"}')  # read, it would refuse a string
    schema = {"type": "object", "properties": {"q": {"$ref": secret.as_uri()}}}
    tool, sent = mcp_tool(schema)

    result = run_bounded(tool, {"q": "a string"})

    assert result.is_success and sent == [{"q": "a string"}]


def test_references_inside_the_schema_still_work() -> None:
    schema = {
        "type": "object",
        "$defs": {"n": {"type": "integer"}},
        "properties": {"q": {"$ref": "#/$defs/n"}},
    }
    tool, sent = mcp_tool(schema)
    result = run_bounded(tool, {"q": "x"})
    assert not result.is_success and "q: 'x' is not of type 'integer'" in (
        result.error_message or ""
    )
    assert sent == []


EVIL = "^(a|a)+$"  # exponential backtracking, in re and in regex alike
SLOW = "a" * 40 + "!"


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"q": {"type": "string", "pattern": EVIL}}},
        {"properties": {"q": {"type": "object", "propertyNames": {"pattern": EVIL}}}},
        {"properties": {"q": {"type": "object", "patternProperties": {EVIL: {}}}}},
        {"properties": {"q": {"patternProperties": {EVIL: {}}, "additionalProperties": False}}},
        {"properties": {"q": {"patternProperties": {EVIL: {}}, "unevaluatedProperties": False}}},
    ],
)
def test_a_catastrophic_pattern_never_runs_unbounded(schema: dict[str, Any]) -> None:
    tool, sent = mcp_tool({"type": "object", **schema})
    value: Any = SLOW if schema["properties"]["q"].get("type") == "string" else {SLOW: 1}

    result = run_bounded(tool, {"q": value})

    assert result.is_success and sent == [{"q": value}]  # undecided in time: left to the server


@pytest.mark.parametrize(("value", "ok"), [("abc-12", True), ("ABC", False)])
def test_an_ordinary_pattern_is_still_checked(value: str, ok: bool) -> None:
    tool, _ = mcp_tool(
        {"type": "object", "properties": {"q": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}}}
    )
    result = run_bounded(tool, {"q": value})
    assert result.is_success is ok
    if not ok:
        assert "q: 'ABC' does not match" in (result.error_message or "")


def test_additional_properties_still_refuse_unknown_keys() -> None:
    tool, _ = mcp_tool(
        {
            "type": "object",
            "properties": {"a": {}},
            "patternProperties": {"^x-": {}},
            "additionalProperties": False,
        }
    )
    assert run_bounded(tool, {"a": 1, "x-y": 2}).is_success
    refused = run_bounded(tool, {"a": 1, "zz": 2})
    assert not refused.is_success and "'zz'" in (refused.error_message or "")
