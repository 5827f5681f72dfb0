"""Test helpers for agentensemble users: scripted chat models that need no network."""

from agentensemble.testing.models import (
    FunctionChatModel,
    ModelRequest,
    ScriptedChatModel,
    ScriptExhaustedError,
    text,
    tool_call,
    tool_calls,
)

__all__ = [
    "FunctionChatModel",
    "ModelRequest",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "text",
    "tool_call",
    "tool_calls",
]
