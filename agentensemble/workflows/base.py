"""The workflow seam: what every workflow takes in and the one method it implements.

``Ensemble.arun`` prepares the tasks (templates filled, agents, models and tools resolved, all
checks done) and hands them to the runner its ``workflow`` names (``runners.runner_for``).
A runner only orders and runs; it never validates the user's setup again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentensemble.execution.agent_executor import AgentTask, ExecutionEnv
from agentensemble.outputs import EnsembleOutput
from agentensemble.task import Task
from agentensemble.task_memory import TaskMemory


@dataclass
class PreparedTask:
    """A task with its templates filled and its agent, model and tools resolved."""

    task: Task
    """The user's task; outputs are keyed by its identity."""
    description: str
    """The description with ``{variables}`` filled."""
    expected_output: str
    """The expected output with ``{variables}`` filled."""
    agent_role: str
    """The filled role of the agent doing it, or ``"handler"`` for a deterministic task."""
    agent_task: AgentTask | None = None
    """What the executor needs; None for a handler task."""
    after_review: Any = None
    """The Review in force after the task (task setting or ensemble policy), if any."""
    before_review: Any = None
    """The Review asked before the task starts, if any."""
    memory: TaskMemory | None = None
    """Memory, knowledge and session of the task (also on ``agent_task``); its final output is
    handed to ``memory.remember`` once any review is done."""


class WorkflowRunner(Protocol):
    """Runs prepared tasks in some order; raises TaskExecutionError holding what completed."""

    async def run(
        self, prepared: Sequence[PreparedTask], env: ExecutionEnv, inputs: Mapping[str, Any]
    ) -> EnsembleOutput:
        """Run every task (or stop early) and return the run's output."""
        ...


__all__ = ["PreparedTask", "WorkflowRunner"]
