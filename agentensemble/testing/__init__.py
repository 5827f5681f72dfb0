"""Test helpers for agentensemble users: scripted chat models that need no network, and a
local OpenAI-compatible HTTP server for tests over real HTTP."""

from agentensemble.testing.models import (
    FunctionChatModel,
    ModelRequest,
    ScriptedChatModel,
    ScriptExhaustedError,
    text,
    tool_call,
    tool_calls,
)
from agentensemble.testing.openai_server import (
    Fault,
    OpenAICompatibleServer,
    RecordedRequest,
    TextReply,
    ToolCallsReply,
)

__all__ = [
    "Fault",
    "FunctionChatModel",
    "ModelRequest",
    "OpenAICompatibleServer",
    "RecordedRequest",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "TextReply",
    "ToolCallsReply",
    "text",
    "tool_call",
    "tool_calls",
]
