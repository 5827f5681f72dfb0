"""Stable keys for what a durable step asks the outside world (a review's id).

A review asked inside a step of a durable run is named after the run and the step, so when a
recovered run re-runs the step (its worker died while the review waited), a webhook is asked
about the same review again instead of getting a new one: the decision a person made meanwhile
is applied, and the review's expiry counts from the first time it was asked.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# the keys asked so far in the current execution of a step: set by the step runner as each
# execution of a step starts (DBOSSteps.run_step), so counts restart at 0 when a step runs again
_asked: ContextVar[Iterator[int] | None] = ContextVar("agentensemble_step_asked", default=None)
MAX_KEY_LENGTH = 160


@contextmanager
def step_execution() -> Iterator[None]:
    """Around one execution of a durable step's body: its keys are counted from 0."""
    token = _asked.set(itertools.count())
    try:
        yield
    finally:
        _asked.reset(token)


def durable_step_key(run: Any = None) -> str | None:
    """The key for ``DBOSSteps.step_key``; None outside a step of a durable run (or in a step
    the step runner did not start, which has no count of its own).

    ``run``: the run's step counters (``_RunSteps``), where the run's creation time is kept
    once read, so a run asking many reviews reads it once."""
    from dbos import DBOS

    asked = _asked.get()
    run_id, step = DBOS.workflow_id, DBOS.step_id
    if asked is None or run_id is None or step is None:
        return None
    ordinal = next(asked)
    created = getattr(run, "created_at", None)
    if created is None:
        created = _created_at(run_id)
        if run is not None:
            run.created_at = created
    key = f"{run_id}:{created}:{step}.{ordinal}"
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


__all__ = ["MAX_KEY_LENGTH", "durable_step_key", "step_execution"]
