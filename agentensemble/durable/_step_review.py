"""A DurableReviewHandler review asked from inside a step (an ensemble nested in a tool's body).

DBOS lets a step publish events but not receive messages, so such a review is published as the
run's reviews are (``review:<id>``, listed under ``reviews``), and the step then waits for the
decision by reading DBOS's message table, without consuming the message. The review's id is the
step's key (``run:created:step.n``), the same when a recovery re-runs the step, so a decision
sent while no process ran is found the moment the step asks again, and is applied once: a
decided review is refused by ``DurableClient.decide``. The step is not checkpointed until it
ends, so the work before the review inside it runs again after a crash (as any step's does).
Reads DBOS's message table through ``_dbos.first_message``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from typing import Any

from agentensemble.durable import _dbos

POLL_SECONDS = 0.2


async def wait_in_step(
    run_id: str, review_id: str, pending: dict[str, Any], timeout: float
) -> tuple[Any, float]:
    """Publish ``pending`` as review ``review_id`` of ``run_id`` from inside a step and wait for
    the first decision sent to it until the review's deadline: ``(message or None, deadline)``.

    The deadline (wall clock) is fixed when the review is first published, ``timeout`` seconds
    from then, and published with it; a step run again after a crash keeps it, so the review
    waits what is left of it, never a whole timeout again (and a client refuses a decision
    after it, as for the run's own reviews)."""
    from dbos import DBOS

    from agentensemble.durable._review import REVIEWS_KEY, review_key
    from agentensemble.durable._steps import reviews_lock

    async with reviews_lock() or contextlib.nullcontext():
        known = await DBOS.get_event_async(run_id, REVIEWS_KEY, timeout_seconds=0)
        listed = [*(known if isinstance(known, list) else [])]
        if review_id not in listed:  # a re-run step asks about the same review again
            await DBOS.set_event_async(REVIEWS_KEY, [*listed, review_id])
    current = await DBOS.get_event_async(run_id, review_key(review_id), timeout_seconds=0)
    state = current.get("state") if isinstance(current, dict) else None
    fixed = current.get("deadline") if isinstance(current, dict) else None
    deadline = (
        float(fixed)
        if isinstance(fixed, int | float) and not isinstance(fixed, bool)
        else time.time() + timeout
    )
    if state == "timed_out":  # it timed out before a crash: it stays timed out
        return None, deadline
    if state != "decided":
        await DBOS.set_event_async(review_key(review_id), {**pending, "deadline": deadline})
    loop = asyncio.get_running_loop()
    with concurrent.futures.ThreadPoolExecutor(1, "agentensemble-step-review") as pool:
        while True:
            message = await loop.run_in_executor(pool, _dbos.first_message, run_id, review_id)
            if message is not None:
                return message, deadline
            left = deadline - time.time()
            if left <= 0:
                return None, deadline
            await asyncio.sleep(min(POLL_SECONDS, left))


__all__ = ["wait_in_step"]
