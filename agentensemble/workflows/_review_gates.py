"""Review gates before and after a task. ``agentensemble_review`` is imported only when used."""

from __future__ import annotations

from typing import Any

from agentensemble._base.dataclass import dataclass
from agentensemble.errors import ConfigurationError
from agentensemble.events import EventEmitter, ReviewDecided, ReviewRequested
from agentensemble.steps import as_step, step_key

NEVER = "never"
AFTER_EVERY_TASK = "after_every_task"
AFTER_LAST_TASK = "after_last_task"
POLICIES = (NEVER, AFTER_EVERY_TASK, AFTER_LAST_TASK)


@dataclass(frozen=True)
class GateResult:
    """A reviewer's verdict in core terms: go on (maybe with edited text) or stop."""

    stop: bool = False
    timed_out: bool = False
    revised_text: str | None = None
    reason: str | None = None


def policy_value(policy: Any) -> str:
    """Normalise a ReviewPolicy (a str enum) or its string value."""
    value = getattr(policy, "value", policy)
    if value is None:
        return NEVER
    if not isinstance(value, str) or value.lower() not in POLICIES:
        raise ValueError(f"review_policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    return value.lower()


def after_review_for(task_review: Any, policy: str, is_last: bool) -> Any:
    """The Review that applies after a task: the task's own setting overrides the policy."""
    if task_review is None and policy == NEVER:
        return None  # the common case needs no import of the review package
    from agentensemble_review import effective_review

    return effective_review(policy, task_review, is_last_task=is_last)


def stable_id(request: Any) -> Any:
    """``request`` with the current durable step's key as its id (unchanged outside one)."""
    key = step_key()
    return request if key is None else request.model_copy(update={"id": key})


def is_enabled(review: Any) -> bool:
    return review is not None and bool(review.enabled)


async def ask_reviewer(
    handler: Any,
    review: Any,
    *,
    timing: str,
    task_description: str,
    output: str,
    emitter: EventEmitter,
) -> GateResult:
    """Ask the handler about one task (before or after it ran) and translate the decision."""
    from agentensemble_review import Edit, ExitEarly, ReviewTiming, aask

    if handler is None:
        raise ConfigurationError("A review is required but the ensemble has no review_handler")

    async def decide() -> Any:
        # built inside the step: in a durable run the request's id is the step's key, so a
        # recovery that re-runs this step asks the webhook about the same review, not a new one
        request = stable_id(
            review.to_request(
                timing=ReviewTiming(timing), task_description=task_description, output=output
            )
        )
        return await aask(handler, request)

    emitter.emit(ReviewRequested(timing=timing, task_description=task_description, output=output))
    decision = await as_step(
        "review",
        f"review:{timing}",
        decide,
        durable_itself=getattr(handler, "durable_itself", False) is True,
    )
    details: dict[str, Any] = {}
    if isinstance(decision, Edit):
        result = GateResult(revised_text=decision.revised_output)
        kind, details = "edit", {"revised_output": decision.revised_output}
    elif isinstance(decision, ExitEarly):
        result = GateResult(stop=True, timed_out=decision.timed_out, reason=decision.reason)
        kind, details = "exit_early", {"reason": decision.reason, "timed_out": decision.timed_out}
    else:
        result, kind = GateResult(), "continue"
    emitter.emit(
        ReviewDecided(
            timing=timing,
            task_description=task_description,
            decision=kind,
            details=details,
            decided_by=getattr(decision, "decided_by", None) or type(handler).__name__,
        )
    )
    return result
