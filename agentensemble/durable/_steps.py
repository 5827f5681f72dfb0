"""Model turns, tool calls and review decisions as DBOS steps.

Inside a durable run every ``as_step`` call becomes ``DBOS.run_step_async``: its result is
checkpointed before the run goes on, and a recovered run gets the checkpoint back instead of
calling again. DBOS numbers steps in the order they start, which is deterministic here: model
turns of a task follow each other, and the tool calls of one turn start in call order.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import threading
import weakref
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

    def step_key(self) -> str | None:
        """What the current step asks (a review), named the same when a recovery re-runs it.

        ``<run id>:<run created at>:<step's function id>.<n>``: the n-th key asked in this
        execution of the step. The run's creation time (kept in the database) tells apart two
        runs given the same id in two databases that share one review server.
        """
        return durable_step_key()


_asked: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_asked_lock = threading.Lock()
MAX_KEY_LENGTH = 160


def durable_step_key() -> str | None:
    """The key for ``DBOSSteps.step_key``; None outside a step of a durable run."""
    from dbos import DBOS
    from dbos._context import get_local_dbos_context

    context = get_local_dbos_context()
    run_id, step = DBOS.workflow_id, DBOS.step_id
    if context is None or run_id is None or step is None:
        return None
    with _asked_lock:  # each execution of a step has its own DBOS context: counts restart at 0
        ordinal = _asked.get(context, 0)
        _asked[context] = ordinal + 1
    key = f"{run_id}:{_created_at(run_id)}:{step}.{ordinal}"
    if len(key) > MAX_KEY_LENGTH:  # a very long run id: a digest keeps ids short for webhooks
        key = "run-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return key


def _created_at(run_id: str) -> int:
    """When run ``run_id`` was first recorded (ms), read in a thread with no DBOS context, so
    the read is not checkpointed as a step of the run (that would shift its step numbers)."""
    from dbos import DBOS

    with concurrent.futures.ThreadPoolExecutor(1, "agentensemble-step-key") as pool:
        status = pool.submit(DBOS.get_workflow_status, run_id).result(timeout=60)
    created = getattr(status, "created_at", None)
    return created if isinstance(created, int) else 0


__all__ = ["DBOSSteps", "DurableDivergenceError", "durable_step_key"]
