"""One tool of an MCP server as an AgentTool: schema from the server, arguments validated
against it before sending, the server's result turned into a ToolResult.

Everything the server sends is untrusted: names are made safe for the model, output is bounded,
and a server that dies or misbehaves gives a failed result the model can read, never a crash.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agentensemble.attachments import MAX_ATTACHMENT_BYTES, Attachment, Audio, Document, Image
from agentensemble.errors import ToolArgumentsError
from agentensemble.mcp._schema_check import schema_errors, schema_validator
from agentensemble.redaction import drop_hidden, redact_text
from agentensemble.tools.base import ToolResult
from agentensemble.tools.instrumented import InstrumentedTool
from agentensemble.tools.policy import ToolPolicy
from agentensemble.tools.schema import load_arguments_json

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_CHARS = 4_000
MAX_SCHEMA_CHARS = 32_000
"""A tool's input schema (as JSON) longer than this is refused: it rides along in every request."""
MAX_TOOLS = 256
"""Tools one server may give an agent (after ``include`` / ``exclude``): each is in every
request."""
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
    with ``properties``; anything else the server sends becomes an empty object schema). Its
    ``description`` and ``title`` texts are cleaned as a tool's description is
    (``shown_text``): they reach the model too."""
    result = _cleaned(schema) if isinstance(schema, Mapping) else {}
    result["type"] = "object"
    if not isinstance(result.get("properties"), Mapping):
        result["properties"] = {}
    return result


def shown_text(text: str, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    """Text a server wrote that the model will read with the tool (its description): characters
    that hide text from a person reading the listing dropped, then redacted (a secret the
    server was given, echoed into its description), then cut to ``limit``."""
    return redact_text(drop_hidden(text))[:limit]


def _cleaned(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` whose ``description`` and ``title`` strings, at any depth, pass
    ``shown_text``; everything else (names, patterns, enums) is left as the server wrote it."""
    top: dict[str, Any] = dict(schema)
    stack: list[Any] = [top]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in list(items):
            if isinstance(value, Mapping):
                node[key] = dict(value)
                stack.append(node[key])
            elif isinstance(value, list):
                node[key] = list(value)
                stack.append(node[key])
            elif isinstance(value, str) and key in ("description", "title"):
                node[key] = shown_text(value, len(value))
    return top


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
        policy: ToolPolicy | None = None,
    ) -> None:
        """``policy``: the server's settings for this tool (its ``tool_policies`` entry over
        its ``tool_policy``, the timeout defaulting to the server's ``timeout``): the tool's
        own, as ``@tool(timeout=...)`` is a function's."""
        self.name = name
        self.remote_name = remote_name
        self.description = shown_text(description)
        self.input_schema = input_schema
        self._validator: Any = _UNBUILT
        self.origin = origin
        self.requires_approval = requires_approval
        self._call = call
        self._max_output_chars = max_output_chars
        if policy is not None:
            self.timeout = policy.timeout
            self.retries = policy.retries
            self.max_concurrency = policy.max_concurrency

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
    """A ``CallToolResult`` as a ToolResult: the text parts joined by blank lines, the structured
    content as JSON when there is no text, ``is_error`` as a failure. Image and audio content,
    and embedded binary resources of a document type, become attachments the model sees (named
    in the text as ``[attachment: NAME]``); what cannot (bad base64, over the size bound, an
    unknown type) is described instead. Output over ``max_chars`` is cut with a note saying so;
    structured content over ``max_chars`` (as JSON) is not kept as ``structured_output`` (records
    and saved outputs would hold it whole: a server's ``str`` result is there a second time).
    """
    parts: list[str] = []
    attachments: list[Attachment] = []
    for item in getattr(result, "content", None) or []:
        attachment, text = _content(item, len(attachments) + 1)
        if attachment is not None:
            attachments.append(attachment)
        if text:
            parts.append(text)
    text = "\n\n".join(parts)
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        shown = json.dumps(structured, ensure_ascii=False, default=str)
        if not text:
            text = shown
        if len(shown) > max_chars:  # kept whole in records and saved outputs: within the bound
            structured = None
    if len(text) > max_chars:
        text = text[:max_chars] + f"\n[output cut at {max_chars} characters]"
    if getattr(result, "is_error", False):
        return ToolResult.failure(text or "the MCP tool reported an error without a message")
    return ToolResult(output=text, structured_output=structured, attachments=tuple(attachments))


#: The MCP content kinds that carry bytes the model can be shown, and what they become.
_BINARY_KINDS: dict[str, type[Attachment]] = {"image": Image, "audio": Audio}


def _content(item: Any, number: int) -> tuple[Attachment | None, str]:
    """One content item: an attachment and the text naming it, or only its text."""
    kind = getattr(item, "type", None)
    if kind in _BINARY_KINDS:
        made = _attachment(_BINARY_KINDS[kind], item, "data", f"{kind} {number}")
        if isinstance(made, Attachment):
            return made, str(made)
        return None, f"[{kind} {getattr(item, 'mime_type', None) or 'of unknown type'}: {made}]"
    if kind == "resource":
        resource = getattr(item, "resource", None)
        text = getattr(resource, "text", None)
        uri = getattr(resource, "uri", "")
        if isinstance(text, str):
            return None, text
        mime = str(getattr(resource, "mime_type", None) or "")
        cls: type[Attachment] = Document
        if mime.startswith(("image/", "audio/")):
            cls = Image if mime.startswith("image/") else Audio
        made = _attachment(cls, resource, "blob", _resource_name(str(uri)))
        if isinstance(made, Attachment):
            return made, str(made)
        return None, f"[binary resource {uri}]"
    return None, _content_text(item)


def _resource_name(uri: str) -> str:
    """A resource's name for the model: the last segment of its URI, printable, at most 80
    characters (the server chose it)."""
    tail = uri.rstrip("/").rsplit("/", 1)[-1]
    return "".join(c for c in tail if c.isprintable())[:80]


def _attachment(cls: type[Attachment], item: Any, field: str, name: str) -> Attachment | str:
    """An attachment from an MCP item's base64 ``field``; else why not (for the text)."""
    encoded = getattr(item, field, None)
    if not isinstance(encoded, str) or not encoded:
        return "no data"
    if len(encoded) > MAX_ATTACHMENT_BYTES * 4 // 3 + 4:  # refused before decoding
        return "over the attachment size bound"
    try:
        data = base64.b64decode(encoded, validate=True)
        made = cls(data=data, media_type=getattr(item, "mime_type", None) or None)
    except (ValueError, TypeError) as error:  # binascii.Error is a ValueError
        return f"not shown ({str(error).split(';')[0][:120]})"
    return made.named(name) if name else made


def _content_text(item: Any) -> str:
    kind = getattr(item, "type", None)
    if kind == "text":
        return str(getattr(item, "text", ""))
    if kind == "resource_link":
        return f"[resource {getattr(item, 'uri', '')}]"
    return f"[{kind or 'unknown'} content]"


__all__ = [
    "MAX_SCHEMA_CHARS",
    "MAX_TOOLS",
    "MCPTool",
    "exposed_name",
    "object_schema",
    "result_from_mcp",
    "shown_text",
]
