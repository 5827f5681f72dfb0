"""The tool system: tool shapes, ``@tool``, schemas, resolution, context and the return rule."""

from agentensemble.outputs import ReturnBehavior
from agentensemble.tools._approval import aask_reviewer
from agentensemble.tools.base import AgentTool, ToolResult
from agentensemble.tools.context import ToolContext, current_tool_context, use_tool_context
from agentensemble.tools.decorator import FunctionTool, ToolDefinition, tool, tool_definition
from agentensemble.tools.instrumented import AbstractAgentTool, InstrumentedTool
from agentensemble.tools.metrics import CallOutcome, ToolMetrics, ToolMetricsRegistry
from agentensemble.tools.pipeline import PipelineErrorStrategy, PipelineStep, ToolPipeline
from agentensemble.tools.resolver import ExecutableTool, ResolvedTools, ToolResolver
from agentensemble.tools.return_rule import should_return_immediately
from agentensemble.tools.schema import function_schema
from agentensemble.tools.typed import TypedAgentTool

__all__ = [
    "AbstractAgentTool",
    "AgentTool",
    "CallOutcome",
    "ExecutableTool",
    "FunctionTool",
    "InstrumentedTool",
    "PipelineErrorStrategy",
    "PipelineStep",
    "ResolvedTools",
    "ReturnBehavior",
    "ToolContext",
    "ToolDefinition",
    "ToolMetrics",
    "ToolMetricsRegistry",
    "ToolPipeline",
    "ToolResolver",
    "ToolResult",
    "TypedAgentTool",
    "aask_reviewer",
    "current_tool_context",
    "function_schema",
    "should_return_immediately",
    "tool",
    "tool_definition",
    "use_tool_context",
]
