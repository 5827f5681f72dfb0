"""DurableClient: submit runs and read their results from any process, without running them.

A web app, a script or a CLI talks to the database only; the workers (``agentensemble durable
worker ...``) do the runs. Nothing here imports the user's ensembles.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from dbos import DBOS, DBOSClient

from agentensemble.durable import _dbos
from agentensemble.durable._database import (
    check_database,
    database_url,
    is_missing_schema,
    no_schema_error,
)
from agentensemble.durable._forks import fork_run
from agentensemble.durable._history import RunStep, read_history, run_reviews
from agentensemble.durable._kept import KeptBytes, keeping_for, stop_using
from agentensemble.durable._kept import use as use_kept_bytes
from agentensemble.durable._leases import live_leases
from agentensemble.durable._liveness import intervals
from agentensemble.durable._retention import prune
from agentensemble.durable._reuse import refuse_changed_reuse, run_arguments
from agentensemble.durable._review import REVIEWS_KEY, check_decision_text, review_key
from agentensemble.durable._run_records import (
    FAILURE_KEY,
    RunFailed,
    RunInfo,
    failure_error,
    output_from,
    run_info,
)
from agentensemble.durable._runtime import CHECKPOINT_FORMAT, QUEUE_NAME, WORKFLOW_NAME
from agentensemble.durable._wake import notify, wake
from agentensemble.errors import AgentEnsembleError, ConfigurationError
from agentensemble.logging import get_logger
from agentensemble.outputs import EnsembleOutput
from agentensemble.tracing.trace import ExecutionTrace

DecisionOutcome = Literal["applied", "queued"]
_log = get_logger()
_FINISHED = {"SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"}


class DurableClient:
    """Queue runs for the workers of ``app_name`` sharing ``database_url``; wait for results."""

    def __init__(
        self,
        database_url: str | None = None,
        *,
        app_name: str = "agentensemble",
        prepare: bool = True,
    ):
        """``prepare=True`` creates the database's tables when no worker has yet, so runs can be
        queued before any worker starts; ``prepare=False`` (the read-only commands) creates
        nothing and refuses, in one line, a database that is missing or unprepared."""
        self.database_url = _resolve(database_url)
        self.app_name = app_name
        check_database(self.database_url, read_only=not prepare)
        _dbos.check_dbos()  # an upgraded DBOS fails here, not in an operator's command
        self._client = DBOSClient(system_database_url=self.database_url, application_name=app_name)
        try:
            _dbos.check_client(self._client)
        except _dbos.DBOSShapeError:
            self._client.destroy()
            raise
        if not _has_tables(self._client):
            if not prepare:
                self._client.destroy()
                raise no_schema_error(self.database_url)
            DBOS.migrate(self.database_url)  # DBOS's public call, as a worker's launch does
        # attachments' bytes, kept by digest beside the checkpoints (_kept.py); a runtime in
        # this process reads its own
        self._kept = KeptBytes(_dbos.client_engine(self._client))
        use_kept_bytes(self._kept, replace=False)

    def submit(
        self, name: str, inputs: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> str:
        """Queue a run of the ensemble registered as ``name``; its run id (idempotent by id)."""
        options: Any = {"queue_name": QUEUE_NAME, "workflow_name": WORKFLOW_NAME}
        if run_id:
            found = self._client.list_workflows(workflow_ids=[run_id], load_output=False)
            refuse_changed_reuse(found, run_id, name, inputs)
        options["workflow_id"] = chosen = run_id or str(uuid.uuid4())  # its attachments name it
        with keeping_for(chosen, self._kept):
            handle: Any = self._client.enqueue(options, name, dict(inputs or {}))
        _wake_workers(self._client, self.app_name)
        return str(handle.get_workflow_id())

    def status(self, run_id: str) -> str:
        """The run's status (ENQUEUED, PENDING, SUCCESS, ERROR, CANCELLED, ...)."""
        found = self._client.retrieve_workflow(run_id).get_status()
        return str(found.status)

    def result(self, run_id: str, *, timeout: float | None = None) -> EnsembleOutput:
        """Wait for ``run_id`` to finish; its output (``DurableRunError`` if it failed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        told = False
        while (status := self.status(run_id)) not in _FINISHED:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(
                    f"run {run_id!r} did not finish within {timeout} s: "
                    f"{self._waiting_for(run_id, status)}"
                )
            if status == "ENQUEUED" and not told:  # say so now, not only at the timeout
                told = True
                if not self.live_workers():
                    _log.warning(self._waiting_for(run_id, status, workers=[]))
            time.sleep(0.1)
        try:
            result: Any = self._client.retrieve_workflow(run_id).get_result()
        except RunFailed as recorded:
            failure = self._client.get_event(run_id, FAILURE_KEY, timeout_seconds=0)
            raise failure_error(run_id, failure, recorded) from None
        return output_from(result, run_id)

    def live_workers(self) -> list[str]:
        """The ids of this application's workers alive now (by their leases in the database,
        renewed within ``dead_after``): those that can run a queued run."""
        _, dead_after = intervals(None, None)
        engine = _dbos.client_engine(self._client)
        return [lease.worker_id for lease in live_leases(engine, self.app_name, dead_after)]

    def _waiting_for(self, run_id: str, status: str, workers: list[str] | None = None) -> str:
        """What run ``run_id`` (not finished, ``status``) is waiting for, for a person."""
        if status != "ENQUEUED":
            return (
                f"it is {status} (running, or waiting for a review: `agentensemble durable "
                f"reviews {run_id}` lists them)"
            )
        found = self.live_workers() if workers is None else workers
        if found:
            return (
                f"it is queued on {QUEUE_NAME!r}, which {len(found)} live worker(s) serve "
                f"({', '.join(found[:5])}); they may all be busy (worker_concurrency)"
            )
        return f"it is queued on {QUEUE_NAME!r} and {self._no_worker()}"

    def unserved_queue(self) -> str | None:
        """None while a live worker serves the run queue; else the sentence that says no
        worker does and how to start one (the CLI prints it after a submit or a fork)."""
        return None if self.live_workers() else f"the queue {QUEUE_NAME!r}: {self._no_worker()}"

    def _no_worker(self) -> str:
        return (
            f"no worker is serving the queue (no worker of app {self.app_name!r} has a live "
            "lease in this database). Start one: `agentensemble durable worker MODULE`, MODULE "
            "being the module whose DurableRuntime, on this database, registers the ensembles"
        )

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
        decided_by: str | None = None,
    ) -> DecisionOutcome:
        """Decide a pending review: ``continue``, ``edit`` (with ``revised_output``) or
        ``exit_early`` (with an optional ``reason``). Returns ``"applied"`` or ``"queued"``.

        A review that is unknown, already decided or timed out is refused with
        ``ReviewClosedError`` and nothing is sent. While a worker holds the run, the call waits
        up to ``confirm_within`` seconds to see its decision applied (``"applied"``), and raises
        ``ReviewClosedError`` if another decision (or the timeout) came first. With no worker
        running the run, the decision waits in the database (``"queued"``) and applies when a
        worker resumes the run; a second decision while one is queued is refused, since only
        the first one sent would apply. ``decided_by`` names who decided: the run's
        ``ReviewDecided`` event and trace record it (else they name the handler). Each text is
        a ``str`` (``revised_output`` and ``reason`` at most 1,000,000 characters, as a fork's
        edited output; ``decided_by`` at most 200), else ``ValueError`` naming it, and nothing
        is sent.
        """
        if decision not in ("continue", "edit", "exit_early"):
            raise ValueError(f"decision must be continue, edit or exit_early; got {decision!r}")
        if decision == "edit" and revised_output is None:
            raise ValueError("an edit needs revised_output")
        check_decision_text(revised_output=revised_output, reason=reason, decided_by=decided_by)
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
        queued_at = _queued_decision_time(self._client, run_id, review_id)
        if queued_at is not None:
            raise ReviewClosedError(
                f"review {review_id!r} of run {run_id!r} already has a decision queued (sent "
                f"{queued_at:%Y-%m-%d %H:%M:%S} UTC), the one that applies: this one was not "
                "sent and is not applied"
            )
        decision_id = uuid.uuid4().hex
        message = {
            "decision": decision,
            "revised_output": revised_output,
            "reason": reason,
            "decision_id": decision_id,
            "sent_at": now,  # the run refuses it if that is past the deadline (clock of record)
            "decided_by": decided_by,
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
                return "applied"
            raise ReviewClosedError(
                f"review {review_id!r} of run {run_id!r} was closed before this decision "
                f"arrived ({state}): it was not applied"
            )
        return "queued"

    def list_runs(self, *, status: str | None = None, limit: int = 100) -> list[RunInfo]:
        """The newest runs first (optionally only those with ``status``); launches nothing, so it
        is safe beside live workers."""
        found = self._client.list_workflows(
            name=WORKFLOW_NAME, status=status, limit=limit, sort_desc=True, load_output=False
        )
        return [run_info(w) for w in found]

    def prune(
        self,
        *,
        keep_last: int | None = None,
        older_than: timedelta | None = None,
        ensemble: str | None = None,
    ) -> int:
        """Delete finished runs past the newest ``keep_last`` per ensemble and those finished
        more than ``older_than`` ago (only ``ensemble``'s, if named); how many were deleted.
        Runs in progress, queued or waiting for a review are never deleted."""
        api = self._client
        return prune(
            api,
            WORKFLOW_NAME,
            keep_last=keep_last,
            older_than=older_than,
            ensemble=ensemble,
            kept=self._kept,
        )

    def steps(self, run_id: str, *, internal: bool = False) -> list[RunStep]:
        """What run ``run_id`` did, in order, as recorded: its model turns, tool calls (arguments
        and outputs) and reviews (asked, decided), each with its time and duration. Runs nothing;
        ``internal`` adds DBOS's own bookkeeping steps."""
        if not self._client.list_workflows(workflow_ids=[run_id], load_output=False):
            raise KeyError(f"no durable run with id {run_id!r}")
        steps = self._client.list_workflow_steps(run_id)
        reviews = run_reviews(
            lambda run, key: self._client.get_event(run, key, timeout_seconds=0), run_id
        )
        return read_history(steps, reviews, internal=internal)

    def trace(self, run_id: str) -> ExecutionTrace:
        """The execution trace a finished run recorded with its output (tasks, model turns,
        tool calls, reviews, timings, with secrets redacted as captured): a replay for a person,
        nothing runs. A run that has not succeeded has none: ``steps`` lists what it did."""
        found = self._client.list_workflows(workflow_ids=[run_id], load_output=False)
        if not found:
            raise ConfigurationError(f"there is no durable run {run_id!r}")
        if str(found[0].status) != "SUCCESS":
            raise ConfigurationError(
                f"run {run_id!r} is {found[0].status}: only a finished run has a trace "
                "(its steps are listed by steps(run_id))"
            )
        trace = self.result(run_id, timeout=0).trace
        if trace is None:
            raise ConfigurationError(f"run {run_id!r} was run with capture='off': no trace")
        return trace

    def inputs(self, run_id: str) -> dict[str, Any]:
        """The inputs run ``run_id`` was started with."""
        found = self._client.list_workflows(workflow_ids=[run_id], load_output=False)
        if not found:
            raise ConfigurationError(f"there is no durable run {run_id!r}")
        args = run_arguments(found[0])
        return dict(args[1]) if len(args) > 1 and isinstance(args[1], dict) else {}

    def fork(
        self,
        run_id: str,
        *,
        from_task: int,
        new_run_id: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        edited_output: str | None = None,
    ) -> str:
        """A new run that reuses ``run_id``'s tasks before ``from_task`` (1-based, as ``steps``
        numbers them) without a model request or a tool call, and runs the rest again (with
        ``inputs`` instead of the parent's, if given); queued for the workers. The parent is
        untouched; the fork records its parent and fork point (``RunInfo.forked_from``,
        ``RunInfo.fork_point``); a fork can be forked again. Its id (``new_run_id`` if given).

        ``edited_output``: task ``from_task - 1`` hands this text downstream instead of its
        recorded output, as a reviewer's Edit would (its steps are still reused)."""
        forked = fork_run(
            self._client,
            run_id,
            from_task=from_task,
            new_run_id=new_run_id,
            inputs=inputs,
            checkpoint_format=CHECKPOINT_FORMAT,
            queue_name=QUEUE_NAME,
            edited_output=edited_output,
        )
        _wake_workers(self._client, self.app_name)
        return forked

    def cancel(self, run_id: str) -> None:
        """Stop ``run_id``: no further step of it is checkpointed (a step running then is refused
        at its write)."""
        self._client.cancel_workflow(run_id)

    def close(self) -> None:
        """Release the database connections."""
        stop_using(self._kept)
        self._client.destroy()

    def __enter__(self) -> DurableClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _wake_workers(client: DBOSClient, app_name: str) -> None:
    """New work: wake a worker of this process, and on Postgres every worker (_wake.py)."""
    wake()
    notify(_dbos.client_engine(client), app_name)


def past_deadline(review: Mapping[str, Any], now: float | None = None) -> bool:
    """Whether a listed review's deadline has passed (it can no longer be decided)."""
    deadline = review.get("deadline")
    return isinstance(deadline, int | float) and (time.time() if now is None else now) > deadline


class ReviewClosedError(AgentEnsembleError):
    """A decision for a review that is unknown, already decided or timed out: not applied."""


def _resolve(url: str | None) -> str:
    return database_url(url)


def _queued_decision_time(client: DBOSClient, run_id: str, review_id: str) -> datetime | None:
    """When the oldest decision still waiting for ``review_id`` was sent, or None.

    A message not yet received by the run is a decision no worker has applied yet."""
    sent = _dbos.oldest_unread_message_ms(client, run_id, review_id)
    return None if sent is None else datetime.fromtimestamp(sent / 1000, tz=timezone.utc)


def _has_tables(client: DBOSClient) -> bool:
    """Whether a DBOS application (a worker, or a client that prepared it) created the tables."""
    try:
        return _dbos.has_system_tables(client)
    except Exception as error:
        if is_missing_schema(error):
            return False
        raise


__all__ = ["DecisionOutcome", "DurableClient", "ReviewClosedError"]
