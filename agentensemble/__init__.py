"""agentensemble: orchestrate teams of LLM agents with exact tool semantics and safe human review.

Importing this package is cheap: litellm is imported on the first real model call, and
``agentensemble_review`` only when a review is configured.
"""

from typing import TYPE_CHECKING, Any

from agentensemble.agent import Agent
from agentensemble.ensemble import Ensemble
from agentensemble.errors import (
    AgentEnsembleError,
    AgentExecutionError,
    ConfigurationError,
    ExitEarlyError,
    GuardrailViolationError,
    LLMError,
    MaxIterationsExceededError,
    OutputParsingError,
    ParallelExecutionError,
    PromptTemplateError,
    TaskExecutionError,
    ToolArgumentsError,
    ToolExecutionError,
    ToolNameError,
)
from agentensemble.events import (
    DelegationCompleted,
    DelegationFailed,
    DelegationStarted,
    EnsembleCompleted,
    EnsembleEvent,
    EnsembleFailed,
    EnsembleListener,
    EnsembleStarted,
    GuardrailChecked,
    LLMCallCompleted,
    LLMCallFailed,
    LLMCallStarted,
    MemoryRetrieved,
    ReviewDecided,
    ReviewRequested,
    StreamRestarted,
    TaskCompleted,
    TaskFailed,
    TaskStarted,
    TokenDelta,
    ToolCallCompleted,
    ToolCallStarted,
)
from agentensemble.guardrails import GuardrailInput, GuardrailResult
from agentensemble.hints import AgentEnsembleWarning, MissingContextWarning, ToolDescriptionWarning
from agentensemble.llm import (
    LLM,
    ChatModel,
    ChatResponse,
    RateLimit,
    RateLimitedModel,
    RetryPolicy,
    ToolCall,
)
from agentensemble.logging import configure_logging
from agentensemble.outputs import (
    EnsembleOutput,
    ExitReason,
    ReturnBehavior,
    TaskMetrics,
    TaskOutput,
    TokenUsage,
    ToolCallRecord,
)
from agentensemble.progress import ConsoleProgressListener
from agentensemble.task import Task, TaskHandlerContext
from agentensemble.tools import (
    AbstractAgentTool,
    AgentTool,
    PipelineErrorStrategy,
    PipelineStep,
    ResolvedTools,
    ToolContext,
    ToolMetrics,
    ToolMetricsRegistry,
    ToolPipeline,
    ToolResolver,
    ToolResult,
    TypedAgentTool,
    current_tool_context,
    should_return_immediately,
    tool,
)
from agentensemble.workflows import ParallelErrorStrategy, Workflow

__version__ = "0.1.0"

if TYPE_CHECKING:
    from agentensemble.tracing.trace import ExecutionTrace


def __getattr__(name: str) -> Any:
    """``ExecutionTrace`` is imported on first use: ``import agentensemble`` stays cheap."""
    if name == "ExecutionTrace":
        from agentensemble.tracing.trace import ExecutionTrace

        return ExecutionTrace
    raise AttributeError(f"module 'agentensemble' has no attribute {name!r}")


__all__ = [
    "LLM",
    "AbstractAgentTool",
    "Agent",
    "AgentEnsembleError",
    "AgentEnsembleWarning",
    "AgentExecutionError",
    "AgentTool",
    "ChatModel",
    "ChatResponse",
    "ConfigurationError",
    "ConsoleProgressListener",
    "DelegationCompleted",
    "DelegationFailed",
    "DelegationStarted",
    "Ensemble",
    "EnsembleCompleted",
    "EnsembleEvent",
    "EnsembleFailed",
    "EnsembleListener",
    "EnsembleOutput",
    "EnsembleStarted",
    "ExecutionTrace",
    "ExitEarlyError",
    "ExitReason",
    "GuardrailChecked",
    "GuardrailInput",
    "GuardrailResult",
    "GuardrailViolationError",
    "LLMCallCompleted",
    "LLMCallFailed",
    "LLMCallStarted",
    "LLMError",
    "MaxIterationsExceededError",
    "MemoryRetrieved",
    "MissingContextWarning",
    "OutputParsingError",
    "ParallelErrorStrategy",
    "ParallelExecutionError",
    "PipelineErrorStrategy",
    "PipelineStep",
    "PromptTemplateError",
    "RateLimit",
    "RateLimitedModel",
    "ResolvedTools",
    "RetryPolicy",
    "ReturnBehavior",
    "ReviewDecided",
    "ReviewRequested",
    "StreamRestarted",
    "Task",
    "TaskCompleted",
    "TaskExecutionError",
    "TaskFailed",
    "TaskHandlerContext",
    "TaskMetrics",
    "TaskOutput",
    "TaskStarted",
    "TokenDelta",
    "TokenUsage",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallCompleted",
    "ToolCallRecord",
    "ToolCallStarted",
    "ToolContext",
    "ToolDescriptionWarning",
    "ToolExecutionError",
    "ToolMetrics",
    "ToolMetricsRegistry",
    "ToolNameError",
    "ToolPipeline",
    "ToolResolver",
    "ToolResult",
    "TypedAgentTool",
    "Workflow",
    "__version__",
    "configure_logging",
    "current_tool_context",
    "should_return_immediately",
    "tool",
]
