"""The e2e tests' name for the packaged server: ``agentensemble.testing.OpenAICompatibleServer``.

The server lives in ``agentensemble/testing/openai_server.py`` (users' tests get it too); this
shim keeps ``from openai_server import OpenAIServer, Fault`` working in tests and benchmarks.
"""

from __future__ import annotations

from agentensemble.testing.openai_server import (
    Fault,
    FaultKind,
    OpenAICompatibleServer,
    RecordedRequest,
    Reply,
    Responder,
    TextReply,
    ToolCallsReply,
    default_chaos_faults,
)

OpenAIServer = OpenAICompatibleServer

__all__ = [
    "Fault",
    "FaultKind",
    "OpenAICompatibleServer",
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "TextReply",
    "ToolCallsReply",
    "default_chaos_faults",
]
