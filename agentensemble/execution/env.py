"""The run-wide services every executor of a run shares (below the executor and the guardrails
runner, which both take it)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from agentensemble._base.dataclass import dataclass
from agentensemble.events import EventEmitter
from agentensemble.tools._calls import ToolSlots
from agentensemble.tools.metrics import ToolMetricsRegistry


@dataclass
class ExecutionEnv:
    """Run-wide services handed to every executor: events, review handler, tool metrics."""

    emitter: EventEmitter = field(default_factory=EventEmitter)
    """The run's listeners (a task's model and tool calls, reviews, guardrails)."""
    review_handler: Any = None
    """Answers tool approvals and task reviews (None: none can be asked)."""
    metrics: ToolMetricsRegistry = field(default_factory=ToolMetricsRegistry)
    """Every tool call of the run, counted by tool name."""
    tool_slots: ToolSlots = field(default_factory=ToolSlots)
    """Each ``max_concurrency`` tool's bound on bodies at once, shared by the whole run."""
    context_policy: Any = None
    """The ensemble's ``ContextPolicy``, for every agent without its own (None: none)."""
    tool_policy: Any = None
    """The ensemble's ``ToolPolicy``: below each agent's, setting by setting (None: none)."""


__all__ = ["ExecutionEnv"]
