"""DurableReviewHandler: a task review that waits in the database, not in a process.

The pending review is published as a DBOS event of the run (``review:<id>``, listed under
``reviews``); the run then waits for a message on the topic ``<id>`` with the request's timeout.
The process may die meanwhile: the run resumes in whichever worker recovers it and goes on
waiting. ``DurableClient.decide`` (from a web app, a CLI, another worker) sends the decision;
a decision for a review that is no longer pending is refused, and a review id is never reused,
so a late decision can never be applied to another review.

A deadline is a deadline whoever is running: the review's deadline (wall clock, fixed once as
a step) is published with it. A decision made after it is refused by the client
(``ReviewClosedError``), and one that reaches the run stamped after it is not applied: the
review times out and ``on_timeout`` applies, as when a worker was waiting all along. The run
waits until that deadline, whenever it resumes, never a full timeout again.

A review asked from inside a step (an ensemble nested in a tool's body) cannot wait for a message
as the run does: DBOS lets a step publish events but not receive messages. It is published the
same way, and the step then waits for the decision by reading DBOS's message table without
consuming the message (``wait_in_step``, through ``_dbos.first_message``). Its id is the step's
key (``run:created:step.n``), the same when a recovery re-runs the step, so a decision sent
while no process ran is found the moment the step asks again, and is applied once: a decided
review is refused by ``DurableClient.decide``. The step is not checkpointed until it ends, so
the work before the review inside it runs again after a crash (as any step's does).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from typing import Any

from agentensemble.durable import _dbos
from agentensemble.durable._forks import MAX_EDITED_OUTPUT
from agentensemble.durable._steps import reviews_lock
from agentensemble.errors import ConfigurationError

REVIEWS_KEY = "reviews"
#: The longest reviewer's name a decision carries (the events and trace name it).
MAX_DECIDED_BY = 200
#: The longest edit or reason a decision carries: the bound of a fork's edited output.
MAX_DECISION_TEXT = MAX_EDITED_OUTPUT
POLL_SECONDS = 0.2  # how often a review waiting inside a step looks for its decision


def check_decision_text(**fields: Any) -> None:
    """Refuse a decision's ``revised_output``, ``reason`` or ``decided_by`` that is not text
    (None allowed) or is longer than its bound, with a ``ValueError`` naming the field: the run
    fails closed on a message that is no decision, and the database keeps what is sent."""
    for name, value in fields.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"{name} must be text (a str); got {type(value).__name__}")
        limit = MAX_DECIDED_BY if name == "decided_by" else MAX_DECISION_TEXT
        if len(value) > limit:
            raise ValueError(f"{name} is {len(value)} characters; at most {limit} are sent")


def review_key(review_id: str) -> str:
    """The event key under which a review's request and state are published."""
    return f"review:{review_id}"


class DurableReviewHandler:
    """Review handler for durable runs: the decision comes later, from any process.

    It decides task reviews (``review=`` / ``before_review=`` and ``review_policy``) and tool
    approvals (``requires_approval``): a durable run asks a tool's approval in the run itself
    and runs the tool's body as a step after it. A pipeline whose steps ask approvals runs in
    the run itself too, each of its steps' bodies a step, so its inner approvals wait durably.
    An approval asked from inside a step (an ensemble nested in a tool's body) is published the
    same way and waited for from the step (``wait_in_step``): its id is the step's key, so
    a recovery that re-runs the step finds the decision sent meanwhile.
    """

    durable_itself = True  # the step runner lets it wait in the run itself, not in a step

    async def areview(self, request: Any) -> Any:
        from dbos import DBOS

        from agentensemble_review import Continue, Edit, ExitEarly, ReviewProtocolError
        from agentensemble_review._asking import apply_on_timeout

        run_id = DBOS.workflow_id
        if run_id is None:
            raise ConfigurationError(
                "DurableReviewHandler decides the task reviews and tool approvals of durable "
                "runs (DurableRuntime.run/submit) only; outside a durable run use a handler "
                "that answers within the call, such as WebhookReviewHandler"
            )
        timeout = request.timeout_seconds or 10 * 365 * 86400
        late = False
        if DBOS.step_id is not None:  # inside a step (an ensemble nested in a tool's body)
            review_id = str(request.id)  # the step's key: the same when the step runs again
            asked = _pending(review_id, request)
            message, deadline = await wait_in_step(run_id, review_id, asked, timeout)
            pending = {**asked, "deadline": deadline}
            late = _late(message, deadline)
        else:
            # the same when a recovery replays it
            review_id = f"{run_id}:{_dbos.current_function_id()}"
            deadline = await DBOS.run_step_async(  # fixed once: a recovery keeps the first one
                {"name": "review_deadline"}, _deadline_in, timeout
            )
            pending = {**_pending(review_id, request), "deadline": deadline}
            # the run's own list, read back (checkpointed): nothing kept in memory between
            # runs; tasks running at once take turns, so no review drops another's from the list
            async with reviews_lock() or contextlib.nullcontext():
                known = await DBOS.get_event_async(run_id, REVIEWS_KEY, timeout_seconds=0)
                listed = [*(known if isinstance(known, list) else []), review_id]
                await DBOS.set_event_async(REVIEWS_KEY, list(listed))
            await DBOS.set_event_async(review_key(review_id), pending)
            # the wait ends at the deadline fixed above, not a full timeout from now: a recovery
            # that replays the review before its wait was recorded (the process died between
            # publishing and waiting) waits what is left, possibly nothing; DBOS records the
            # wait's end as the run waits, so a later replay keeps it
            left = max(0.0, deadline - time.time())
            message = await DBOS.recv_async(topic=review_id, timeout_seconds=left)
            late = _late(message, deadline)
        if message is None or late:
            await DBOS.set_event_async(review_key(review_id), {**pending, "state": "timed_out"})
            return apply_on_timeout(request)
        applied = message.get("decision_id") if isinstance(message, dict) else None
        await DBOS.set_event_async(
            review_key(review_id), {**pending, "state": "decided", "decision_id": applied}
        )
        kind = message.get("decision") if isinstance(message, dict) else None
        who = message.get("decided_by") if isinstance(message, dict) else None
        by = who[:MAX_DECIDED_BY] if isinstance(who, str) and who else None  # events name it
        if kind == "continue":
            return Continue(decided_by=by)
        if kind == "edit" and isinstance(message.get("revised_output"), str):
            return Edit(message["revised_output"], decided_by=by)
        if kind == "exit_early" and isinstance(message.get("reason"), str | None):
            return ExitEarly(message.get("reason"), decided_by=by)
        # a message that is no decision never approves anything: the review fails closed
        raise ReviewProtocolError(
            f"review {review_id!r} got a message that is not a decision: {str(message)[:200]!r}"
        )


def _pending(review_id: str, request: Any) -> dict[str, Any]:
    return {
        "review_id": review_id,
        "state": "pending",
        "request": request.model_dump(mode="json", exclude={"id"}),
    }


def _deadline_in(seconds: float) -> float:
    return time.time() + seconds


def _late(message: Any, deadline: float) -> bool:
    """Whether ``message`` was sent after the review's deadline (while no worker waited)."""
    sent = message.get("sent_at") if isinstance(message, dict) else None
    return isinstance(sent, int | float) and sent > deadline


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


__all__ = [
    "MAX_DECIDED_BY",
    "MAX_DECISION_TEXT",
    "REVIEWS_KEY",
    "DurableReviewHandler",
    "check_decision_text",
    "review_key",
    "wait_in_step",
]
