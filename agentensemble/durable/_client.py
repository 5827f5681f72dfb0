"""DurableClient: submit runs and read their results from any process, without running them.

A web app, a script or a CLI talks to the database only; the workers (``python -m
agentensemble.durable worker ...``) do the runs. Nothing here imports the user's ensembles.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from dbos import DBOSClient

from agentensemble.durable._review import REVIEWS_KEY, review_key
from agentensemble.durable._runtime import (
    FAILURE_KEY,
    QUEUE_NAME,
    WORKFLOW_NAME,
    RunFailed,
    RunInfo,
    _output_from,
    database_url,
    failure_error,
    run_info,
)
from agentensemble.errors import AgentEnsembleError
from agentensemble.outputs import EnsembleOutput

_FINISHED = {"SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"}


class DurableClient:
    """Queue runs for the workers of ``app_name`` sharing ``database_url``; wait for results."""

    def __init__(self, database_url: str | None = None, *, app_name: str = "agentensemble"):
        self.database_url = _resolve(database_url)
        self.app_name = app_name
        self._client = DBOSClient(system_database_url=self.database_url, application_name=app_name)

    def submit(
        self, name: str, inputs: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> str:
        """Queue a run of the ensemble registered as ``name``; its run id (idempotent by id)."""
        options: Any = {"queue_name": QUEUE_NAME, "workflow_name": WORKFLOW_NAME}
        if run_id:
            options["workflow_id"] = run_id
        handle: Any = self._client.enqueue(options, name, dict(inputs or {}))
        return str(handle.get_workflow_id())

    def status(self, run_id: str) -> str:
        """The run's status (ENQUEUED, PENDING, SUCCESS, ERROR, CANCELLED, ...)."""
        found = self._client.retrieve_workflow(run_id).get_status()
        return str(found.status)

    def result(self, run_id: str, *, timeout: float | None = None) -> EnsembleOutput:
        """Wait for ``run_id`` to finish; its output (``DurableRunError`` if it failed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.status(run_id) not in _FINISHED:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id!r} did not finish within {timeout} s")
            time.sleep(0.1)
        try:
            result: Any = self._client.retrieve_workflow(run_id).get_result()
        except RunFailed as recorded:
            failure = self._client.get_event(run_id, FAILURE_KEY, timeout_seconds=0)
            raise failure_error(run_id, failure, recorded) from None
        return _output_from(result, run_id)

    def pending_reviews(self, run_id: str) -> list[dict[str, Any]]:
        """The reviews of ``run_id`` still waiting for a decision: id and request fields."""
        reviews = []
        for review_id in self._client.get_event(run_id, REVIEWS_KEY, timeout_seconds=0) or []:
            found = self._client.get_event(run_id, review_key(review_id), timeout_seconds=0)
            if isinstance(found, dict) and found.get("state") == "pending":
                reviews.append(found)
        return reviews

    def decide(
        self,
        run_id: str,
        review_id: str,
        decision: str,
        *,
        revised_output: str | None = None,
        reason: str | None = None,
        confirm_within: float = 5.0,
    ) -> None:
        """Decide a pending review: ``continue``, ``edit`` (with ``revised_output``) or
        ``exit_early`` (with an optional ``reason``).

        A review that is unknown, already decided or timed out is refused with
        ``ReviewClosedError`` and nothing is sent. While a worker holds the run, the call waits
        up to ``confirm_within`` seconds to see its decision applied, and raises
        ``ReviewClosedError`` if another decision (or the timeout) came first. With no worker
        running the run, the decision waits in the database and the first one sent is applied.
        """
        if decision not in ("continue", "edit", "exit_early"):
            raise ValueError(f"decision must be continue, edit or exit_early; got {decision!r}")
        if decision == "edit" and revised_output is None:
            raise ValueError("an edit needs revised_output")
        found = self._client.get_event(run_id, review_key(review_id), timeout_seconds=0)
        if not isinstance(found, dict):
            raise ReviewClosedError(f"run {run_id!r} has no review {review_id!r}")
        if found.get("state") != "pending":
            raise ReviewClosedError(
                f"review {review_id!r} of run {run_id!r} is no longer pending "
                f"({found.get('state')}): the decision was not applied"
            )
        now = time.time()
        if past_deadline(found, now):
            raise ReviewClosedError(
                f"review {review_id!r} of run {run_id!r} timed out (its deadline passed while "
                "no worker held the run): the decision was not applied; the review's on_timeout "
                "applies when the run resumes"
            )
        decision_id = uuid.uuid4().hex
        message = {
            "decision": decision,
            "revised_output": revised_output,
            "reason": reason,
            "decision_id": decision_id,
            "sent_at": now,  # the run refuses it if that is past the deadline (clock of record)
        }
        self._client.send(run_id, message, topic=review_id)
        deadline = time.monotonic() + confirm_within
        while time.monotonic() < deadline:
            found = self._client.get_event(run_id, review_key(review_id), timeout_seconds=0)
            state = found.get("state") if isinstance(found, dict) else None
            if state == "pending":
                time.sleep(0.05)
                continue
            if state == "decided" and found.get("decision_id") == decision_id:
                return
            raise ReviewClosedError(
                f"review {review_id!r} of run {run_id!r} was closed before this decision "
                f"arrived ({state}): it was not applied"
            )

    def list_runs(self, *, status: str | None = None, limit: int = 100) -> list[RunInfo]:
        """The newest runs first (optionally only those with ``status``); launches nothing, so it
        is safe beside live workers."""
        found = self._client.list_workflows(
            name=WORKFLOW_NAME, status=status, limit=limit, sort_desc=True, load_output=False
        )
        return [run_info(w) for w in found]

    def cancel(self, run_id: str) -> None:
        """Stop ``run_id``: no further step of it starts."""
        self._client.cancel_workflow(run_id)

    def close(self) -> None:
        """Release the database connections."""
        self._client.destroy()


def past_deadline(review: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether a listed review's deadline has passed (it can no longer be decided)."""
    deadline = review.get("deadline")
    return isinstance(deadline, int | float) and (time.time() if now is None else now) > deadline


class ReviewClosedError(AgentEnsembleError):
    """A decision for a review that is unknown, already decided or timed out: not applied."""


def _resolve(url: str | None) -> str:
    return database_url(url)


__all__ = ["DurableClient", "ReviewClosedError"]
