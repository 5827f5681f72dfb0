"""The dispatch point: one ``Workflow → runner`` table, read by ``Ensemble.arun``.

Each runner implements ``WorkflowRunner.run(prepared, env, inputs)``; the settings a workflow
needs (concurrency cap, error strategy, the manager and its team) arrive in ``RunSettings``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentensemble._base.dataclass import dataclass
from agentensemble.execution.agent_executor import ExecutionEnv
from agentensemble.outputs import EnsembleOutput
from agentensemble.workflows import ParallelErrorStrategy, Workflow
from agentensemble.workflows.base import PreparedRun, WorkflowRunner, first_call
from agentensemble.workflows.parallel import ParallelRunner
from agentensemble.workflows.sequential import run_sequential


@dataclass(frozen=True)
class RunSettings:
    """The ensemble's workflow settings for one run."""

    max_concurrency: int | None = None
    """PARALLEL: how many tasks may run at once (None: no cap)."""
    parallel_error_strategy: ParallelErrorStrategy = ParallelErrorStrategy.FAIL_FAST
    """PARALLEL: what a failure does to the rest of the run."""
    manager: Any = None
    """HIERARCHICAL: the prepared manager and its workers (``hierarchical.ManagerSetup``)."""


class SequentialRunner:
    """Steps in list order (``sequential.run_sequential``)."""

    async def run(
        self, prepared: PreparedRun, env: ExecutionEnv, inputs: Mapping[str, Any]
    ) -> EnsembleOutput:
        return await run_sequential(prepared.steps, first_call(prepared, env, inputs))


def _parallel(settings: RunSettings) -> WorkflowRunner:
    return ParallelRunner(settings.max_concurrency, settings.parallel_error_strategy)


def _hierarchical(settings: RunSettings) -> WorkflowRunner:
    from agentensemble.workflows.hierarchical import HierarchicalRunner

    runner: WorkflowRunner = HierarchicalRunner(settings.manager)
    return runner


RUNNERS: dict[Workflow, Callable[[RunSettings], WorkflowRunner]] = {
    Workflow.SEQUENTIAL: lambda settings: SequentialRunner(),
    Workflow.PARALLEL: _parallel,
    Workflow.HIERARCHICAL: _hierarchical,
}


def runner_for(workflow: Workflow, settings: RunSettings) -> WorkflowRunner:
    """The runner of ``workflow``, built with this run's settings."""
    return RUNNERS[Workflow(workflow)](settings)


__all__ = [
    "RUNNERS",
    "RunSettings",
    "SequentialRunner",
    "runner_for",
]
