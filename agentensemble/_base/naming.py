"""The tool naming rule, shared by every place that names a tool."""

from __future__ import annotations

import re

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_]+$")
MAX_TOOL_NAME_LENGTH = 64


def tool_name_problem(name: object) -> str | None:
    """Say what is wrong with a tool name, or None when it is valid."""
    if not isinstance(name, str) or not name:
        return f"Tool name must be a non-empty string, got {name!r}"
    if len(name) > MAX_TOOL_NAME_LENGTH:
        return f"Tool name {name!r} is {len(name)} characters long; at most {MAX_TOOL_NAME_LENGTH}"
    if not TOOL_NAME_PATTERN.match(name):
        return f"Tool name {name!r} must match ^[A-Za-z0-9_]+$ (letters, digits, underscores)"
    return None
