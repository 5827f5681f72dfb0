"""Observing runs: the execution trace data model (``TaskMetrics`` lives in ``outputs``).

The recorder that builds a trace from events lives in ``tracing.recorder`` (imported by the
facade only); this package root stays free of the execution layers so ``outputs`` can use it.
"""

from agentensemble.outputs import TaskMetrics
from agentensemble.tracing.trace import (
    SCHEMA_VERSION,
    DelegationTrace,
    ErrorInfo,
    EventRecord,
    ExecutionTrace,
    GuardrailTrace,
    ModelTurn,
    RequestedToolCall,
    ReviewTrace,
    TaskTrace,
    TokenCounts,
    ToolCallTrace,
)

__all__ = [
    "SCHEMA_VERSION",
    "DelegationTrace",
    "ErrorInfo",
    "EventRecord",
    "ExecutionTrace",
    "GuardrailTrace",
    "ModelTurn",
    "RequestedToolCall",
    "ReviewTrace",
    "TaskMetrics",
    "TaskTrace",
    "TokenCounts",
    "ToolCallTrace",
]
