"""Calling a built-in tool the way a run does: JSON arguments in, a ToolResult out."""

from __future__ import annotations

import json
from typing import Any

from agentensemble.tools import AgentTool, ToolResolver, ToolResult


def call(tool: AgentTool, **arguments: Any) -> ToolResult:
    """One call with ``arguments`` as the model would send them (sync path)."""
    return tool.execute(json.dumps(arguments))


async def run(tool: AgentTool, arguments: str) -> ToolResult:
    """One call through the resolver's executable, exactly as the executor runs it."""
    (executable,) = ToolResolver().resolve([tool]).tools
    return await executable.run(arguments)


def refused(result: ToolResult, *fragments: str) -> bool:
    """A refusal is a failed result whose message says why — never a success, never a crash."""
    message = result.error_message or ""
    return not result.is_success and all(fragment in message for fragment in fragments)
