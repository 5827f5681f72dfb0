"""Model turns, tool calls and review decisions as DBOS steps.

Inside a durable run every ``as_step`` call becomes ``DBOS.run_step_async``: its result is
checkpointed before the run goes on, and a recovered run gets the checkpoint back instead of
calling again. DBOS numbers steps in the order they start, which is deterministic here: model
turns of a task follow each other, and the tool calls of one turn start in call order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agentensemble.errors import AgentEnsembleError
from agentensemble.execution.steps import StepKind
from agentensemble.run_context import current_task_index

T = TypeVar("T")


class DurableDivergenceError(AgentEnsembleError):
    """A recovered run asked for a different step than its checkpoints hold.

    The code changed between the crash and the recovery (another model, other tools, another
    task order): mixing old checkpoints with new code would give an answer nobody asked for.
    """


class DBOSSteps:
    """The step runner of durable runs: every step goes through DBOS."""

    async def run_step(
        self, kind: StepKind, name: str, call: Callable[[], Awaitable[T]], *, durable_itself: bool
    ) -> T:
        from dbos import DBOS
        from dbos._error import DBOSUnexpectedStepError

        if DBOS.workflow_id is None or DBOS.step_id is not None or durable_itself:
            # outside a durable run, a step inside a step, or a call that checkpoints itself
            return await call()

        task = current_task_index()
        if task is not None:  # names unique per task: a replay in another order is caught
            name = f"task{task}:{name}"

        async def step() -> Any:
            return await call()

        try:
            result: T = await DBOS.run_step_async({"name": name}, step)
        except DBOSUnexpectedStepError as error:
            raise DurableDivergenceError(
                f"run {DBOS.workflow_id!r} diverged from its checkpoints at {kind} step "
                f"{name!r}: {error}. The code that recovers a run must make the same model, "
                "tool and review calls in the same order as the code that started it; finish "
                "or cancel runs before deploying such a change"
            ) from None
        return result


__all__ = ["DBOSSteps", "DurableDivergenceError"]
