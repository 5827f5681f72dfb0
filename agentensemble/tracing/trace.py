"""The execution trace's data model, where users import it from: defined in
``agentensemble.trace_model`` (below ``outputs``, which holds a trace, so neither imports the
other)."""

from agentensemble.trace_model import (
    SCHEMA_VERSION,
    Capture,
    DelegationTrace,
    ErrorInfo,
    EventRecord,
    ExecutionTrace,
    GuardrailTrace,
    ModelTurn,
    PromptRef,
    RequestedToolCall,
    ReviewTrace,
    TaskMetrics,
    TaskTrace,
    TokenCounts,
    ToolCallTrace,
)

__all__ = [
    "SCHEMA_VERSION",
    "Capture",
    "DelegationTrace",
    "ErrorInfo",
    "EventRecord",
    "ExecutionTrace",
    "GuardrailTrace",
    "ModelTurn",
    "PromptRef",
    "RequestedToolCall",
    "ReviewTrace",
    "TaskMetrics",
    "TaskTrace",
    "TokenCounts",
    "ToolCallTrace",
]
