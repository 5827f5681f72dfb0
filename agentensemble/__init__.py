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
    GraphMaxStepsError,
    GraphNoEdgeError,
    GuardrailViolationError,
    LLMError,
    LoopMaxIterationsError,
    MaxIterationsExceededError,
    ModelSettingsError,
    OutputParsingError,
    ParallelExecutionError,
    PromptTemplateError,
    TaskExecutionError,
    ToolArgumentsError,
    ToolExecutionError,
    ToolNameError,
    UntrustedInputError,
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
    GraphStepCompleted,
    GuardrailChecked,
    LLMCallCompleted,
    LLMCallFailed,
    LLMCallStarted,
    LoopIterationCompleted,
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
from agentensemble.hints import (
    AgentEnsembleWarning,
    MissingContextWarning,
    ToolDescriptionWarning,
    ToolExceptionWarning,
)
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
    GraphResult,
    LoopResult,
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
from agentensemble.workflows.graph import Edge, Graph, GraphState
from agentensemble.workflows.loop import Loop, LoopState

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
    "Edge",
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
    "Graph",
    "GraphMaxStepsError",
    "GraphNoEdgeError",
    "GraphResult",
    "GraphState",
    "GraphStepCompleted",
    "GuardrailChecked",
    "GuardrailInput",
    "GuardrailResult",
    "GuardrailViolationError",
    "LLMCallCompleted",
    "LLMCallFailed",
    "LLMCallStarted",
    "LLMError",
    "Loop",
    "LoopIterationCompleted",
    "LoopMaxIterationsError",
    "LoopResult",
    "LoopState",
    "MaxIterationsExceededError",
    "MemoryRetrieved",
    "MissingContextWarning",
    "ModelSettingsError",
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
    "ToolExceptionWarning",
    "ToolExecutionError",
    "ToolMetrics",
    "ToolMetricsRegistry",
    "ToolNameError",
    "ToolPipeline",
    "ToolResolver",
    "ToolResult",
    "TypedAgentTool",
    "UntrustedInputError",
    "Workflow",
    "__version__",
    "configure_logging",
    "current_tool_context",
    "should_return_immediately",
    "tool",
]
