"""agentensemble: orchestrate teams of LLM agents with exact tool semantics and safe human review.

Importing this package is cheap: litellm is imported on the first real model call, and
``agentensemble_review`` only when a review is configured.
"""

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
    PromptTemplateError,
    TaskExecutionError,
    ToolArgumentsError,
    ToolExecutionError,
    ToolNameError,
)
from agentensemble.events import (
    EnsembleCompleted,
    EnsembleEvent,
    EnsembleListener,
    EnsembleStarted,
    GuardrailChecked,
    LLMCallCompleted,
    ReviewDecided,
    ReviewRequested,
    TaskCompleted,
    TaskFailed,
    TaskStarted,
    ToolCallCompleted,
)
from agentensemble.guardrails import GuardrailInput, GuardrailResult
from agentensemble.hints import AgentEnsembleWarning, MissingContextWarning, ToolDescriptionWarning
from agentensemble.llm import LLM, ChatModel, ChatResponse, RetryPolicy, ToolCall
from agentensemble.logging import configure_logging
from agentensemble.outputs import (
    EnsembleOutput,
    ExitReason,
    ReturnBehavior,
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
from agentensemble.workflows import Workflow

__version__ = "0.1.0"

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
    "Ensemble",
    "EnsembleCompleted",
    "EnsembleEvent",
    "EnsembleListener",
    "EnsembleOutput",
    "EnsembleStarted",
    "ExitEarlyError",
    "ExitReason",
    "GuardrailChecked",
    "GuardrailInput",
    "GuardrailResult",
    "GuardrailViolationError",
    "LLMCallCompleted",
    "LLMError",
    "MaxIterationsExceededError",
    "MissingContextWarning",
    "OutputParsingError",
    "PipelineErrorStrategy",
    "PipelineStep",
    "PromptTemplateError",
    "ResolvedTools",
    "RetryPolicy",
    "ReturnBehavior",
    "ReviewDecided",
    "ReviewRequested",
    "Task",
    "TaskCompleted",
    "TaskExecutionError",
    "TaskFailed",
    "TaskHandlerContext",
    "TaskOutput",
    "TaskStarted",
    "TokenUsage",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallCompleted",
    "ToolCallRecord",
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
