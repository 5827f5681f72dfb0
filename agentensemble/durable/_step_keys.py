"""Stable keys for what a durable step asks the outside world (a review's id).

A review asked inside a step of a durable run is named after the run and the step, so when a
recovered run re-runs the step (its worker died while the review waited), a webhook is asked
about the same review again instead of getting a new one: the decision a person made meanwhile
is applied, and the review's expiry counts from the first time it was asked.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import threading
import weakref
from typing import Any

_asked: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_asked_lock = threading.Lock()
MAX_KEY_LENGTH = 160


def durable_step_key(run: Any = None) -> str | None:
    """The key for ``DBOSSteps.step_key``; None outside a step of a durable run.

    ``run``: the run's step counters (``_RunSteps``), where the run's creation time is kept
    once read, so a run asking many reviews reads it once."""
    from dbos import DBOS
    from dbos._context import get_local_dbos_context

    context = get_local_dbos_context()
    run_id, step = DBOS.workflow_id, DBOS.step_id
    if context is None or run_id is None or step is None:
        return None
    with _asked_lock:  # each execution of a step has its own DBOS context: counts restart at 0
        ordinal = _asked.get(context, 0)
        _asked[context] = ordinal + 1
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


__all__ = ["MAX_KEY_LENGTH", "durable_step_key"]
