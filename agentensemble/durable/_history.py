"""A durable run's history as a person reads it: its tasks' model turns, tool calls (arguments and
outputs) and reviews (what was asked, what was decided), each with its time and duration.

Read from what DBOS already records (the run's steps and events); nothing runs. Step names are
``task<i>:model:<agent role>`` and ``task<i>:tool:<tool name>`` (``_steps.py``); a review's wait
is DBOS's ``recv`` step, and its request is the run's ``review:<id>`` event (``_review.py``).
Texts are kept as recorded here; whoever shows them escapes and redacts them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from agentensemble.durable._review import REVIEWS_KEY, review_key

StepKind = Literal["model", "tool", "review", "other"]
_INTERNAL = {"DBOS.getEvent", "DBOS.setEvent", "DBOS.sleep", "DBOS.getStatus"}
TASK_RANGE_BITS = 20  # as in _steps.py: task i numbers its steps from i * 2**20


@dataclass(frozen=True)
class RunStep:
    """One thing a durable run did, as recorded."""

    number: int
    """DBOS's step number (a fork point is a task's first number, ``task << 20``)."""
    task: int | None
    """The 1-based task it belongs to, or None for the run's own steps."""
    kind: StepKind
    name: str
    """The agent's role (model turn), the tool's name (tool call), the review's id (review)."""
    detail: str
    """What was asked: the tool calls a model turn requested, a tool's arguments, a review's
    tool, prompt and the text under review."""
    output: str
    """What came back: the model's text, the tool's output, the decision."""
    started_at: datetime | None
    duration: timedelta | None
    error: str | None = None
    asked: str | None = None
    """A tool call a reviewer edited: the arguments the model asked for (``detail`` then shows
    the ones the tool ran with, and says so); None when the tool ran with what was asked."""


def read_history(
    steps: Sequence[Any], reviews: Sequence[dict[str, Any]], *, internal: bool = False
) -> list[RunStep]:
    """``steps`` (DBOS step infos, in order) and ``reviews`` (the run's review events, in the
    order asked) as RunSteps. DBOS's own bookkeeping steps are left out unless ``internal``."""
    history: list[RunStep] = []
    requested: list[tuple[str, str]] = []  # (tool, arguments) asked by the last model turn
    edits: dict[str, str] = {}  # tool -> the arguments a reviewer's edit made it run with
    waiting = list(reviews)
    numbered = {n: r for r in reviews if (n := _asked_at(r)) is not None}
    for step in steps:
        name = str(step.get("function_name", ""))
        if name in _INTERNAL and not internal:
            continue
        task, kind, label = _parse_name(name)
        number = int(step.get("function_id", 0))
        if task is None and number >= 1 << TASK_RANGE_BITS:
            task = number >> TASK_RANGE_BITS
        output, error = step.get("output"), step.get("error")
        detail, shown, asked = "", _text(output), None
        if kind == "model":
            calls = list(getattr(output, "tool_calls", None) or [])
            requested = [(str(c.name), str(c.arguments)) for c in calls]
            detail = "; ".join(f"{tool}({arguments})" for tool, arguments in requested)
            shown = str(getattr(output, "content", None) or "")
        elif kind == "tool":
            arguments = next((a for t, a in requested if t == label), "")
            requested = [r for r in requested if r != (label, arguments)]
            result = getattr(output, "result", output)
            # the call's own record (an approval asked inside its step), else the edit of the
            # review the run waited for before this body step (DurableReviewHandler)
            ran_with = getattr(output, "ran_with", None)
            if ran_with is None:
                ran_with = edits.pop(label, None)
            detail = arguments if ran_with is None else ran_with
            if ran_with is not None and ran_with != arguments:
                asked = arguments
                detail = f"ran with: {ran_with} (a reviewer's edit; the model asked: {arguments})"
            shown = str(getattr(result, "output", "") or "")
            if getattr(result, "is_success", True) is False:
                error = getattr(result, "error_message", None) or "failed"
        elif name == "DBOS.recv":
            kind = "review"
            review = _review_of(number, numbered, waiting)
            label = str(review.get("review_id", "review"))
            detail = _asked(review.get("request") or {})
            shown = _decision(output)
            tool = (review.get("request") or {}).get("tool_name")
            applied = review.get("state") == "decided"  # a late decision is not applied
            if tool and applied and isinstance(output, dict) and output.get("decision") == "edit":
                edits[str(tool)] = str(output.get("revised_output"))
        history.append(
            RunStep(
                number=number,
                task=task,
                kind=kind,
                name=label,
                detail=detail,
                output=shown,
                started_at=_time(step.get("started_at_epoch_ms")),
                duration=_duration(step),
                error=None if error is None else str(error),
                asked=asked,
            )
        )
    return history


def _asked_at(review: dict[str, Any]) -> int | None:
    """The step number a review asked in the run itself was taken at (``<run>:<number>``)."""
    tail = str(review.get("review_id", "")).rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _review_of(
    number: int, numbered: dict[int, dict[str, Any]], waiting: list[dict[str, Any]]
) -> dict[str, Any]:
    """The review whose wait is step ``number``: the one asked last before it (calls of one
    turn ask at once, so the order they were listed in is not their steps' order)."""
    before = [n for n in numbered if n < number]
    review = numbered.pop(max(before)) if before else (waiting[0] if waiting else {})
    if review in waiting:
        waiting.remove(review)
    return review


def run_reviews(get_event: Any, run_id: str) -> list[dict[str, Any]]:
    """The run's reviews in the order they were asked (``get_event(run_id, key)`` reads one)."""
    found = []
    for review_id in get_event(run_id, REVIEWS_KEY) or []:
        review = get_event(run_id, review_key(review_id))
        if isinstance(review, dict):
            found.append(review)
    return found


def _parse_name(name: str) -> tuple[int | None, StepKind, str]:
    head, _, rest = name.partition(":")
    if head.startswith("task") and head[4:].isdigit():
        kind, _, label = rest.partition(":")
        if kind in ("model", "tool"):
            return int(head[4:]), kind, label  # type: ignore[return-value]
        return int(head[4:]), "other", rest
    return None, "other", name


def _asked(request: dict[str, Any]) -> str:
    parts = []
    if request.get("tool_name"):
        parts.append(f"tool {request['tool_name']}")
    if request.get("prompt"):
        parts.append(f"prompt: {request['prompt']}")
    parts.append(f"under review: {request.get('output', '')}")
    return "; ".join(parts)


def _decision(message: Any) -> str:
    if message is None:
        return "no answer before the timeout"
    if not isinstance(message, dict):
        return f"not a decision: {message!r}"
    decision = str(message.get("decision"))
    if decision == "edit":
        return f"edit: {message.get('revised_output')}"
    if decision == "exit_early" and message.get("reason"):
        return f"exit_early: {message['reason']}"
    return decision


def _text(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _time(epoch_ms: Any) -> datetime | None:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc) if epoch_ms else None


def _duration(step: Any) -> timedelta | None:
    started, completed = step.get("started_at_epoch_ms"), step.get("completed_at_epoch_ms")
    if not started or not completed:
        return None
    return timedelta(milliseconds=completed - started)


__all__ = ["RunStep", "read_history", "run_reviews"]
