"""What the database records of a run, read back: its status as a ``RunInfo``, its output, or
the error and completed outputs of a failed run (``DurableRunError``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from agentensemble.durable._reuse import FORK_ATTRIBUTE, run_arguments
from agentensemble.errors import TaskExecutionError
from agentensemble.outputs import EnsembleOutput, TaskOutput

FAILURE_KEY = "failure"  # the event holding a failed run's error and completed outputs
TASKS_KEY = "tasks"  # the run's task count, kept in its result and its failure event


class DurableRunError(TaskExecutionError):
    """A durable run failed; ``completed_outputs`` holds what its finished tasks produced."""


@dataclass(frozen=True)
class RunInfo:
    """What the database knows of one run."""

    run_id: str
    ensemble: str | None
    status: str  # PENDING, ENQUEUED, SUCCESS, ERROR, CANCELLED, ...
    created_at: datetime | None
    error: str | None = None
    forked_from: str | None = None
    """The run this one was forked from (``DurableClient.fork``), or None."""
    fork_point: int | None = None
    """The task (1-based) from which a fork ran again; the tasks before it were reused."""


class RunFailed(Exception):
    """The error a failed durable run records (one message, so any process can load it)."""


def failure_error(run_id: str, failure: Any, recorded: BaseException) -> DurableRunError:
    """The ``DurableRunError`` of a failed run, with the outputs its finished tasks kept."""
    if not isinstance(failure, dict):
        return DurableRunError(f"run {run_id!r} failed: {recorded}")
    completed = [TaskOutput.model_validate(o) for o in failure.get("completed_outputs", [])]
    return DurableRunError(
        f"run {run_id!r} failed: {failure.get('error')}", completed_outputs=completed
    )


def output_from(result: Any, run_id: str) -> EnsembleOutput:
    if not isinstance(result, dict):
        raise DurableRunError(f"run {run_id!r} ended without an ensemble output: {result!r}")
    if "output" in result:
        return EnsembleOutput.model_validate(result["output"])
    completed = [TaskOutput.model_validate(o) for o in result.get("completed_outputs", [])]
    raise DurableRunError(
        f"run {run_id!r} failed: {result.get('error')}", completed_outputs=completed
    )


def fork_record(status: Any) -> dict[str, Any] | None:
    """What a fork's status records of its parent and fork point, or None for a run that is no
    fork."""
    attributes = getattr(status, "attributes", None)
    found = attributes.get(FORK_ATTRIBUTE) if isinstance(attributes, dict) else None
    return found if isinstance(found, dict) else None


def run_info(status: Any) -> RunInfo:
    """A DBOS workflow status as a RunInfo."""
    created = getattr(status, "created_at", None)
    args = run_arguments(status)
    fork = fork_record(status) or {}
    return RunInfo(
        run_id=status.workflow_id,
        ensemble=args[0] if args else None,
        status=str(status.status),
        created_at=datetime.fromtimestamp(created / 1000, tz=timezone.utc) if created else None,
        error=str(status.error) if getattr(status, "error", None) else None,
        forked_from=fork.get("parent"),
        fork_point=fork.get("from_task"),
    )


__all__ = [
    "FAILURE_KEY",
    "TASKS_KEY",
    "DurableRunError",
    "RunFailed",
    "RunInfo",
    "failure_error",
    "fork_record",
    "output_from",
    "run_info",
]
