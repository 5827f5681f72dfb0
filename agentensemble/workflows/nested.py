"""A nested Ensemble as a step of another one: its steps run inside the outer run.

It receives the outer run's inputs, events go to the outer run's listeners, its tasks are task
runs of the outer run (same run id, trace, review handler, durable checkpoints), and its
``workflow`` (SEQUENTIAL or PARALLEL) orders its own steps. A later step's ``context`` naming
the nested ensemble gets its final output: the last completed task's, in its task order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentensemble.workflows import ParallelErrorStrategy
from agentensemble.workflows.parallel import StepsRun
from agentensemble.workflows.step import Step, StepCall, StepResult, run_in_order


@dataclass
class EnsembleStep:
    """A prepared nested ensemble: its own steps, in its own order of work."""

    ensemble: Any
    steps: list[Step]
    parallel: bool = False
    limit: int | None = None
    strategy: ParallelErrorStrategy = ParallelErrorStrategy.FAIL_FAST

    @property
    def source(self) -> Any:
        return self.ensemble

    @property
    def capacity(self) -> int:
        return sum(step.capacity for step in self.steps)

    async def run(self, call: StepCall) -> StepResult:
        within = (*call.within, f"ensemble:{self.ensemble.label}")
        inner = call.at(call.base, scope=call.scope.child(), within=within)
        if not self.parallel:
            return await run_in_order(self.steps, inner)
        run = StepsRun(self.steps, inner, self.limit)
        await run.run(self.strategy is ParallelErrorStrategy.FAIL_FAST)
        if run.failures:
            raise run.first_failure()[1]
        return run.last_result()


__all__ = ["EnsembleStep"]
