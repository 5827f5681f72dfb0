"""The workflow seam: what every workflow takes in and the one method it implements.

``Ensemble.arun`` prepares the run once (``workflows/prepare.py``: templates filled, agents,
models and tools resolved, every step built, all checks done) and hands the ``PreparedRun`` to
the runner its ``workflow`` names (``runners.runner_for``). A runner only orders and runs; it
never validates the user's setup again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from agentensemble._base.dataclass import dataclass
from agentensemble.execution.agent_executor import AgentTask, ExecutionEnv
from agentensemble.outputs import EnsembleOutput
from agentensemble.task import Task
from agentensemble.task_memory import TaskMemory
from agentensemble.workflows.step import RunState, Scope, StepCall


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
    inputs: Mapping[str, Any] | None = None
    """The inputs its templates were filled from when they differ from the run's (a
    ``for_each`` item's: the run's inputs plus ``item`` and ``index``)."""
    memory: TaskMemory | None = None
    """Memory, knowledge and session of the task (also on ``agent_task``); its final output is
    handed to ``memory.remember`` once any review is done."""


@dataclass
class PreparedRun:
    """A run ready to go: its steps (``workflows/step.py``), every task run prepared in them,
    and the number of task-run slots (``task_index`` values) it may use."""

    steps: Sequence[Any]
    """The top-level steps, in the ensemble's order."""
    tasks: Sequence[PreparedTask]
    """Every prepared task run (each fan-out item apart), for team building and tool sources."""
    total: int
    """Slots of the whole run (``TaskStarted.total_tasks``)."""


def first_call(prepared: PreparedRun, env: ExecutionEnv, inputs: Mapping[str, Any]) -> StepCall:
    """The call a run's top-level steps are run with: a fresh state and scope."""
    return StepCall(env=env, inputs=inputs, state=RunState(total=prepared.total), scope=Scope())


class WorkflowRunner(Protocol):
    """Runs a prepared run's steps in some order; raises TaskExecutionError holding what
    completed."""

    async def run(
        self, prepared: PreparedRun, env: ExecutionEnv, inputs: Mapping[str, Any]
    ) -> EnsembleOutput:
        """Run every task (or stop early) and return the run's output."""
        ...


__all__ = ["PreparedRun", "PreparedTask", "WorkflowRunner", "first_call"]
