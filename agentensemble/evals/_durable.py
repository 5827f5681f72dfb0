"""Case runs on a durable runtime's workers (extra ``agentensemble-py[durable]``, DBOS queues).

Each run of each case is queued under a run id made of the evaluation's id, the case's name
and the attempt: queuing again under the same id is a no-op (DBOS keys a run by its id), so an
evaluation started again (after its own process crashed, say) reads back the finished runs and
waits for the others; a worker that crashes has its runs taken over by a live one, which replays
their checkpointed model and tool calls instead of paying for them again.
"""

from __future__ import annotations

from typing import Any

from agentensemble.evals.dataset import Case
from agentensemble.outputs import EnsembleOutput


def run_id(eval_id: str, case: Case, attempt: int) -> str:
    """The durable run id of one attempt of one case."""
    return f"eval-{eval_id}-{case.name}-{attempt}"


def durable_runs(runtime: Any, name: Any, eval_id: str) -> Any:
    """A ``Produce`` that queues each run of the ensemble registered as ``name``."""
    if not isinstance(name, str):
        raise TypeError(
            "with runtime=, evaluate() takes the name an ensemble is registered under "
            "(runtime.register(name, factory)), not an ensemble"
        )
    if not (hasattr(runtime, "asubmit") and hasattr(runtime, "aresult")):
        raise TypeError("runtime= takes a launched agentensemble.durable.DurableRuntime")

    async def produce(case: Case, attempt: int) -> EnsembleOutput:
        queued = await runtime.asubmit(name, case.inputs, run_id=run_id(eval_id, case, attempt))
        output: EnsembleOutput = await runtime.aresult(queued)
        return output

    return produce


__all__ = ["durable_runs", "run_id"]
