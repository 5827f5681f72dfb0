"""The tool system: tool shapes, ``@tool``, schemas, resolution, context and the return rule.

Each name is imported on first use: ``from agentensemble import tool`` (or a run) loads the
modules it needs, not the pipeline, approval or typed-tool modules a script may never use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentensemble._base.lazy import lazy_exports

if TYPE_CHECKING:
    from agentensemble.outputs import ReturnBehavior
    from agentensemble.tools._approval import aask_reviewer
    from agentensemble.tools.base import AgentTool, ToolResult
    from agentensemble.tools.context import ToolContext, current_tool_context, use_tool_context
    from agentensemble.tools.decorator import FunctionTool, ToolDefinition, tool, tool_definition
    from agentensemble.tools.instrumented import AbstractAgentTool, InstrumentedTool
    from agentensemble.tools.metrics import CallOutcome, ToolMetrics, ToolMetricsRegistry
    from agentensemble.tools.pipeline import PipelineErrorStrategy, PipelineStep, ToolPipeline
    from agentensemble.tools.policy import ToolPolicy
    from agentensemble.tools.resolver import ExecutableTool, ResolvedTools, ToolResolver
    from agentensemble.tools.return_rule import should_return_immediately
    from agentensemble.tools.schema import function_schema
    from agentensemble.tools.typed import TypedAgentTool

_LAZY: dict[str, str] = {
    "ReturnBehavior": "agentensemble.outputs",
    "aask_reviewer": "agentensemble.tools._approval",
    "AgentTool": "agentensemble.tools.base",
    "ToolResult": "agentensemble.tools.base",
    "ToolContext": "agentensemble.tools.context",
    "current_tool_context": "agentensemble.tools.context",
    "use_tool_context": "agentensemble.tools.context",
    "FunctionTool": "agentensemble.tools.decorator",
    "ToolDefinition": "agentensemble.tools.decorator",
    "tool": "agentensemble.tools.decorator",
    "tool_definition": "agentensemble.tools.decorator",
    "AbstractAgentTool": "agentensemble.tools.instrumented",
    "InstrumentedTool": "agentensemble.tools.instrumented",
    "CallOutcome": "agentensemble.tools.metrics",
    "ToolMetrics": "agentensemble.tools.metrics",
    "ToolMetricsRegistry": "agentensemble.tools.metrics",
    "PipelineErrorStrategy": "agentensemble.tools.pipeline",
    "PipelineStep": "agentensemble.tools.pipeline",
    "ToolPipeline": "agentensemble.tools.pipeline",
    "ToolPolicy": "agentensemble.tools.policy",
    "ExecutableTool": "agentensemble.tools.resolver",
    "ResolvedTools": "agentensemble.tools.resolver",
    "ToolResolver": "agentensemble.tools.resolver",
    "should_return_immediately": "agentensemble.tools.return_rule",
    "function_schema": "agentensemble.tools.schema",
    "TypedAgentTool": "agentensemble.tools.typed",
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

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
    "ToolPolicy",
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
