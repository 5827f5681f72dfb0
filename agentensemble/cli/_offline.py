"""The offline model of the command line (``--model scripted``): no network, no key.

It answers each task with a short text naming the task and, when a task has an output type,
with JSON built from the schema it is sent (it declares native structured output), so a whole
crew file runs end to end as a dry run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentensemble.llm.response_format import ResponseFormat
from agentensemble.llm.types import ChatResponse, Message, ToolSpec
from agentensemble.outputs import TokenUsage

SCRIPTED = "scripted"


def _example(schema: Any, definitions: dict[str, Any], depth: int = 0) -> Any:
    """A small value matching ``schema`` (first enum value, one list item, ...)."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if "$ref" in schema:
        return _example(definitions.get(schema["$ref"].rsplit("/", 1)[-1]), definitions, depth + 1)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return _example(schema[key][0], definitions, depth + 1)
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: _example(sub, definitions, depth + 1) for name, sub in properties.items()}
    if kind == "array":
        return [_example(schema.get("items", {}), definitions, depth + 1)]
    return {"string": "example", "integer": 1, "number": 1.0, "boolean": True}.get(str(kind))


class OfflineChatModel:
    """Answers without a network: a line naming the task, or schema-shaped JSON."""

    model = SCRIPTED

    async def supports_response_format(self) -> bool:
        return True

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: ResponseFormat | None = None,
    ) -> ChatResponse:
        if response_format is not None:
            schema = response_format.schema
            content = json.dumps(_example(schema, schema.get("$defs", {})))
        else:
            task = _task_line(messages)
            content = f"(scripted answer) {task}"
        usage = TokenUsage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
        return ChatResponse(content=content, usage=usage, finish_reason="stop", model=SCRIPTED)


def _task_line(messages: Sequence[Message]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            text = str(message.get("content") or "")
            if "## Task\n" in text:
                text = text.split("## Task\n", 1)[1]
            return text.strip().splitlines()[0] if text.strip() else ""
    return ""


__all__ = ["SCRIPTED", "OfflineChatModel"]
