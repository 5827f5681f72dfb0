"""One tool of an MCP server as an AgentTool: schema from the server, arguments validated
against it before sending, the server's result turned into a ToolResult.

Everything the server sends is untrusted: names are made safe for the model, output is bounded,
and a server that dies or misbehaves gives a failed result the model can read, never a crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agentensemble.errors import ToolArgumentsError
from agentensemble.mcp._schema_check import schema_errors, schema_validator
from agentensemble.tools.base import ToolResult
from agentensemble.tools.instrumented import InstrumentedTool
from agentensemble.tools.schema import load_arguments_json

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_CHARS = 4_000
DEFAULT_MAX_OUTPUT_CHARS = 100_000
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")
_UNBUILT = object()

CallFn = Callable[[str, dict[str, Any]], Awaitable[Any]]


def exposed_name(remote_name: str, prefix: str | None) -> str:
    """The name the model sees: ``prefix_`` + the server's name, with every character outside
    ``[A-Za-z0-9_]`` replaced by ``_``, cut to 64 characters (``read-file`` → ``read_file``)."""
    name = _UNSAFE_NAME_CHARS.sub("_", remote_name) or "tool"
    if prefix:
        name = f"{prefix}_{name}"
    return name[:MAX_NAME_LENGTH]


def object_schema(schema: object) -> dict[str, Any]:
    """The server's input schema as a function-calling ``parameters`` object (an object schema
    with ``properties``; anything else the server sends becomes an empty object schema)."""
    result = dict(schema) if isinstance(schema, Mapping) else {}
    result["type"] = "object"
    if not isinstance(result.get("properties"), Mapping):
        result["properties"] = {}
    return result


class MCPTool(InstrumentedTool[dict[str, Any]]):
    """A tool listed by an MCP server (built by the server's connection, not by users).

    Instrumented like AbstractAgentTool: timed, logged, counted and — when the server's
    ``requires_approval`` names it — approved by the reviewer (who sees the JSON arguments).
    """

    def __init__(
        self,
        *,
        name: str,
        remote_name: str,
        description: str,
        input_schema: dict[str, Any],
        call: CallFn,
        origin: str,
        requires_approval: bool = False,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        self.name = name
        self.remote_name = remote_name
        self.description = description[:MAX_DESCRIPTION_CHARS]
        self.input_schema = input_schema
        self._validator: Any = _UNBUILT
        self.origin = origin
        self.requires_approval = requires_approval
        self._call = call
        self._max_output_chars = max_output_chars

    def parameters_schema(self) -> dict[str, Any]:
        return self.input_schema

    def _parse_input(self, raw: str) -> dict[str, Any]:
        prefix = f"Invalid arguments for '{self.name}'"
        expected = "Send a JSON object matching the tool's parameters."
        data = load_arguments_json(raw, prefix, expected) if raw.strip() else {}
        if not isinstance(data, dict):
            raise ToolArgumentsError(f"{prefix}: expected a JSON object. {expected}")
        if self._validator is _UNBUILT:
            self._validator = schema_validator(self.input_schema)
        problems = schema_errors(self._validator, data)
        if problems:
            raise ToolArgumentsError(f"{prefix}: " + "; ".join(problems))
        return data

    def _shown(self, parsed: dict[str, Any], raw: str) -> str:
        """What the reviewer reads: the arguments that will be sent, as compact JSON."""
        return json.dumps(parsed, ensure_ascii=False)

    async def ado_execute(self, input: dict[str, Any]) -> ToolResult:
        result = await self._call(self.remote_name, input)
        return result_from_mcp(result, self._max_output_chars)

    def __repr__(self) -> str:
        return f"MCPTool(name={self.name!r}, {self.origin})"


def result_from_mcp(result: Any, max_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> ToolResult:
    """A ``CallToolResult`` as a ToolResult: the text parts joined by blank lines (other parts
    described), the structured content as JSON when there is no text, ``is_error`` as a failure.
    Output over ``max_chars`` is cut with a note saying so.
    """
    parts = [_content_text(item) for item in (getattr(result, "content", None) or [])]
    text = "\n\n".join(part for part in parts if part)
    structured = getattr(result, "structured_content", None)
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False, default=str)
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[output cut at {max_chars} characters]"
    if getattr(result, "is_error", False):
        return ToolResult.failure(text or "the MCP tool reported an error without a message")
    return ToolResult.success(text, structured_output=structured)


def _content_text(item: Any) -> str:
    kind = getattr(item, "type", None)
    if kind == "text":
        return str(getattr(item, "text", ""))
    if kind in ("image", "audio"):
        data = getattr(item, "data", "") or ""
        return f"[{kind} {getattr(item, 'mime_type', 'unknown type')}, {len(data)} base64 chars]"
    if kind == "resource":
        resource = getattr(item, "resource", None)
        text = getattr(resource, "text", None)
        uri = getattr(resource, "uri", "")
        return str(text) if isinstance(text, str) else f"[binary resource {uri}]"
    if kind == "resource_link":
        return f"[resource {getattr(item, 'uri', '')}]"
    return f"[{kind or 'unknown'} content]"


__all__ = ["MCPTool", "exposed_name", "object_schema", "result_from_mcp"]
