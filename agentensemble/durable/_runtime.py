"""DurableRuntime: each run a DBOS workflow, a queue for workers.

A run is the DBOS workflow ``agentensemble.run(name, inputs)``. It rebuilds the ensemble from
its registered factory and runs it with every model turn, tool call and review decision as a
checkpointed step (``_steps.py``), so a run interrupted by a crash resumes where it stopped,
in this process after a restart or in any worker sharing the database.

This module owns the workflow and the runtime around it: starting DBOS (and what launches with
it) and shutting it down, starting, queueing, streaming and querying runs. Which factory builds
the ensemble registered under a name, and whether it builds, is ``_registry.py``'s.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from contextvars import ContextVar
from datetime import timedelta
from typing import Any, TypeVar

from dbos import DBOS, Queue, SetWorkflowID

from agentensemble._base.background_loop import renew_default_executors, run_on_background_loop
from agentensemble._run import execute
from agentensemble.durable import _dbos
from agentensemble.durable._database import (
    DATABASE_ENV,
    DEFAULT_DATABASE_URL,
    check_database,
    database_url,
)
from agentensemble.durable._forks import fork_edits
from agentensemble.durable._fresh import fresh_execution, read_run_start
from agentensemble.durable._fresh import install as skip_fresh_reads
from agentensemble.durable._kept import KeptBytes, keeping_for, stop_using
from agentensemble.durable._kept import use as use_kept_bytes
from agentensemble.durable._liveness import Liveness, recover_pending_runs
from agentensemble.durable._registry import (
    EnsembleFactory,
    build,
    build_every_registered,
    check,
)
from agentensemble.durable._registry import register as register_ensemble
from agentensemble.durable._retention import PruneTimer, Retention, prune
from agentensemble.durable._reuse import fork_inputs, refuse_changed_reuse
from agentensemble.durable._run_records import (
    FAILURE_KEY,
    TASKS_KEY,
    DurableRunError,
    RunFailed,
    RunInfo,
    failure_error,
    output_from,
    run_info,
)
from agentensemble.durable._sqlite import SqliteSync, prepare_sqlite
from agentensemble.durable._steps import DBOSSteps, numbering_per_task
from agentensemble.durable._wake import Listener, notify, start_listener, stop_listener, wake
from agentensemble.durable._wake import install as wake_on_work
from agentensemble.ensemble import Ensemble
from agentensemble.errors import ConfigurationError, TaskExecutionError
from agentensemble.events import EnsembleEvent, EnsembleListener, TaskStarted
from agentensemble.logging import get_logger
from agentensemble.outputs import EnsembleOutput
from agentensemble.run_context import naming_run, new_run_id
from agentensemble.steps import use_step_runner

WORKER_ENV = "AGENTENSEMBLE_WORKER_ID"
QUEUE_NAME = "agentensemble-runs"
WORKFLOW_NAME = "agentensemble.run"
# Which checkpoints a run's code can resume: bumped when step numbers or names change. DBOS
# would otherwise hash its workflows' source and its own version, so that upgrading DBOS or
# this package left every unfinished run waiting, unresumed and unreported.
# 4: a review fixes its deadline as a step of its own, and the calls of one turn that run at once
# number their steps in ranges of their own (3 was either, on its own)
CHECKPOINT_FORMAT = "agentensemble-durable-4"
_APP_NAME = re.compile(r"^[a-z0-9_-]{3,256}$")

T = TypeVar("T")
_log = get_logger()
_STEPS = DBOSSteps()
# run id -> the listeners of a DurableRuntime.astream watching it in this process
_watchers: dict[str, Sequence[EnsembleListener]] = {}
# The ensemble ``arun`` built (checking its factory) for the run it starts now, by name: the run
# takes it instead of calling the factory a second time. The workflow's task inherits it as it
# is created, and clears it in its own context, so it serves one execution: a replay in another
# process, or a run started from inside this one, calls the factory as before.
_handed: ContextVar[tuple[str, Ensemble] | None] = ContextVar(
    "agentensemble_durable_handed", default=None
)


@DBOS.workflow(name=WORKFLOW_NAME)
async def _durable_run(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """One durable run: the ensemble rebuilt from its factory, every call a checkpointed step."""
    handed = _handed.get()
    if handed is not None:
        _handed.set(None)  # this task's context only: nothing started from here gets it
    ensemble = handed[1] if handed is not None and handed[0] == name else build(name)
    watchers = _watchers.get(DBOS.workflow_id or "")
    # one read as the run starts: a fork's edited output (_forks.py), and whether any step of
    # the run is checkpointed yet (a fresh execution skips DBOS's read before each step)
    attributes, fresh = await read_run_start(DBOS.workflow_id or "")
    replaced = fork_inputs(attributes)  # a fork's new inputs (kept in its record)
    if replaced is not None:
        inputs = replaced
    with (
        use_step_runner(_STEPS),
        numbering_per_task(fork_edits(attributes)),
        fresh_execution(fresh),
        naming_run(DBOS.workflow_id or new_run_id()),  # one id: the output's is the run's
    ):
        counted = _TaskCount()  # kept with the result: a fork checks its task index against it
        try:
            if watchers is None:
                output = await execute(ensemble, inputs, (counted,))  # what arun() does
            else:  # streamed to DurableRuntime.astream in this process
                output = await execute(ensemble, inputs, (*watchers, counted), True)
        except TaskExecutionError as error:
            # what the finished tasks produced is kept beside the run; raising makes the run's
            # status ERROR, so failures show where runs are listed and monitored
            failure = {
                "error": f"{type(error).__name__}: {error}",
                "completed_outputs": [o.model_dump(mode="json") for o in error.completed_outputs],
                **counted.recorded(),
            }
            await DBOS.set_event_async(FAILURE_KEY, failure)
            raise RunFailed(failure["error"]) from None
    dumped = output.model_dump(mode="json", exclude={"tool_metrics"})
    return {"output": dumped, **counted.recorded()}


class _TaskCount:
    """Listens for the run's task count (``TaskStarted.total_tasks``: every task slot of the
    run, as its steps number them), kept with the run's result as ``tasks``."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total: int | None = None

    def on_event(self, event: EnsembleEvent) -> None:
        if isinstance(event, TaskStarted):
            self.total = max(self.total or 0, event.total_tasks)

    def recorded(self) -> dict[str, int]:
        return {} if self.total is None else {TASKS_KEY: self.total}


class DurableRuntime:
    """Runs registered ensembles durably on DBOS (SQLite by default, Postgres for many workers).

    One per process. Register every ensemble by a stable name, then ``launch()``: that also
    resumes this application's runs that a crash interrupted. ``run()`` runs now in this
    process; ``submit()`` queues a run for whichever worker is free.

    ``sqlite_sync``: on SQLite, ``"normal"`` (default) commits a checkpoint without waiting for
    the disk: safe when the process dies, the last steps may run again if the machine loses
    power; ``"full"`` waits for the disk on every commit (docs/durable.md, "What it costs").
    """

    def __init__(
        self,
        database_url: str | None = None,
        *,
        app_name: str = "agentensemble",
        worker_concurrency: int = 4,
        concurrency: int | None = None,
        max_runs_per_period: tuple[int, float] | None = None,
        worker_id: str | None = None,
        poll_interval: float = 0.2,
        sqlite_sync: SqliteSync = "normal",
        heartbeat_interval: float | None = None,
        dead_after: float | None = None,
        take_over: bool = True,
        retention: Retention | None = None,
    ) -> None:
        if not _APP_NAME.match(app_name):
            raise ConfigurationError(
                f"app_name {app_name!r} must be 3-256 characters of a-z, 0-9, _ and -"
            )
        if worker_concurrency < 1:
            raise ConfigurationError(f"worker_concurrency must be >= 1, got {worker_concurrency}")
        self.database_url: str = globals()["database_url"](database_url)
        check_database(self.database_url, read_only=False)
        self.app_name = app_name
        # each worker process needs its own id: at launch a worker resumes the unfinished runs
        # recorded under its id, so two live workers sharing one would run a run twice
        self.worker_id = worker_id or os.environ.get(WORKER_ENV) or "local"
        if not 0.001 <= poll_interval <= 60:
            raise ConfigurationError(f"poll_interval must be 0.001-60 seconds, got {poll_interval}")
        self.poll_interval = poll_interval
        self.liveness = Liveness(
            self.database_url, app_name, self.worker_id, heartbeat_interval, dead_after, take_over
        )
        prepare_sqlite(self.database_url, sqlite_sync)
        self._launched = False
        DBOS(
            config={
                "name": app_name,
                "system_database_url": self.database_url,
                "log_level": "WARNING",
                "executor_id": self.worker_id,
                # runs resume under the same checkpoint format, whatever else is upgraded
                "application_version": CHECKPOINT_FORMAT,
                # no round trip to test a pooled connection before every transaction (one per
                # step): a connection the server dropped fails its statement instead, which
                # DBOS retries on a new one, as for any lost connection
                "db_engine_kwargs": {"pool_pre_ping": False},
            }
        )
        self._queue_settings: dict[str, Any] = {
            "worker_concurrency": worker_concurrency,
            "global_concurrency": concurrency,
            "limiter": None,
        }
        if max_runs_per_period is not None:
            limit, period = max_runs_per_period
            self._queue_settings["limiter"] = {"limit": limit, "period": period}
        self._queue: Queue | None = None
        self._kept: KeptBytes | None = None
        self._listener: Listener | None = None
        self.retention = retention
        self._pruner = (
            None
            if retention is None
            else PruneTimer(
                retention.every,
                lambda: self.prune(keep_last=retention.keep_last, older_than=retention.older_than),
            )
        )
        self.unresumable: list[RunInfo] = []
        """Unfinished runs found at launch that this code cannot resume (logged as a warning)."""

    # -- set-up -------------------------------------------------------------------------------

    def register(self, name: str, ensemble: Ensemble | EnsembleFactory) -> None:
        """Make ``ensemble`` (or a zero-argument factory building it) runnable as ``name``.

        A factory is called for every run, so each run gets fresh tools and state; register
        the same names in every worker process (the module the worker command imports).
        """
        register_ensemble(name, ensemble)

    def launch(self) -> None:
        """Check every registered ensemble builds, then start DBOS (resuming interrupted runs)."""
        build_every_registered()  # the determinism guard: a run must find its ensemble
        _quiet_dbos_logs()
        _dbos.check_dbos()  # an upgraded DBOS fails here, not at the first crash it must handle
        with self.liveness.launching():  # the lease first: see _liveness.py
            DBOS.launch()
            _dbos.check_launched()
            skip_fresh_reads()
            self._kept = KeptBytes(_dbos.system_engine())
            use_kept_bytes(self._kept)
            self._queue = DBOS.register_queue(
                QUEUE_NAME,
                polling_interval_sec=self.poll_interval,
                on_conflict="always_update",
                **self._queue_settings,
            )
            # new work wakes the queue poll: runs finishing or submitted here, and on Postgres
            # a notification from any process (_wake.py)
            wake_on_work(QUEUE_NAME, self._queue_settings["worker_concurrency"])
            self._listener = start_listener(self.database_url, self.app_name)
        self._launched = True
        self.unresumable = _report_other_formats()
        if self._pruner is not None:
            self._pruner.start()

    def __enter__(self) -> DurableRuntime:
        """``with runtime:`` launches it (registered ensembles first) and shuts it down after."""
        self.launch()
        return self

    def __exit__(self, *_: object) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        """Stop DBOS here; unfinished runs stay, to resume here or be taken over (the lease too)."""
        if self._pruner is not None:
            self._pruner.stop()
        self.liveness.stop()
        stop_listener(self._listener)
        self._listener = None
        if self._kept is not None:
            stop_using(self._kept)
        DBOS.destroy(destroy_registry=False)
        renew_default_executors()  # DBOS's pool was their default executor; it is shut down now
        self._launched = False

    # -- runs ---------------------------------------------------------------------------------

    async def arun(
        self, name: str, inputs: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> EnsembleOutput:
        """Run ``name`` in this process and wait for its output (resumes ``run_id`` if known)."""
        self._require_launched()
        self.liveness.refuse_if_lost()
        built = build(name)  # fails here, before any run starts, if the factory does
        existing = await _recorded_run(run_id, name, inputs)
        if run_id and existing is not None and getattr(existing, "queue_name", None):
            # queued (submit): a worker runs it; starting it again here would only make DBOS
            # warn that the queue cannot change, on every resume by id
            handle: Any = await DBOS.retrieve_workflow_async(run_id)
        else:
            handing = _handed.set((name, built))  # the run started here uses it (_handed)
            chosen = run_id or str(uuid.uuid4())  # known first: its inputs' attachments name it
            try:
                with SetWorkflowID(chosen), keeping_for(chosen):
                    handle = await DBOS.start_workflow_async(_durable_run, name, dict(inputs or {}))
            finally:
                _handed.reset(handing)
        return await _result_of(handle, handle.workflow_id)

    async def asubmit(
        self, name: str, inputs: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> str:
        """Queue a run of ``name`` for any worker; its run id (``run_id`` makes it idempotent)."""
        self._require_launched()
        check(name)  # its factory builds (once per registered factory: the worker builds)
        await _recorded_run(run_id, name, inputs)
        chosen = run_id or str(uuid.uuid4())  # known first: its inputs' attachments name it
        with SetWorkflowID(chosen), keeping_for(chosen):
            assert self._queue is not None
            handle = await self._queue.enqueue_async(_durable_run, name, dict(inputs or {}))
        wake()  # this process's queue poll; others' through Postgres
        await asyncio.to_thread(notify, _dbos.system_engine(), self.app_name)
        return handle.workflow_id

    async def aresult(self, run_id: str) -> EnsembleOutput:
        """Wait for run ``run_id`` (started here or anywhere) and return its output."""
        self._require_launched()
        handle: Any = await DBOS.retrieve_workflow_async(run_id)
        return await _result_of(handle, run_id)

    def astream(
        self, name: str, inputs: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> AsyncIterator[EnsembleEvent]:
        """Run ``name`` here and yield its events as they happen, as ``Ensemble.astream`` does
        (model text as ``TokenDelta``s, ending with ``EnsembleCompleted``).

        The events are those of the work this process does: a resumed run replays its finished
        steps (their events come again, their model text does not stream again), and a run
        already finished yields nothing. Closing the iterator stops watching, not the run: it
        is durable, and ``result(run_id)`` still returns its output.
        """
        from agentensemble.streaming import stream_events

        chosen = run_id or str(uuid.uuid4())

        async def run(listeners: Sequence[EnsembleListener]) -> EnsembleOutput:
            if chosen in _watchers:
                raise ConfigurationError(f"run {chosen!r} is already streamed in this process")
            _watchers[chosen] = listeners
            try:
                return await self.arun(name, inputs, run_id=chosen)
            finally:
                _watchers.pop(chosen, None)

        return stream_events(run)

    def run(
        self, name: str, inputs: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> EnsembleOutput:
        """Synchronous ``arun``."""
        return _sync(self.arun(name, inputs, run_id=run_id))

    def submit(
        self, name: str, inputs: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> str:
        """Synchronous ``asubmit``."""
        return _sync(self.asubmit(name, inputs, run_id=run_id))

    def result(self, run_id: str) -> EnsembleOutput:
        """Synchronous ``aresult``."""
        return _sync(self.aresult(run_id))

    def status(self, run_id: str) -> RunInfo:
        """What the database knows of ``run_id``."""
        self._require_launched()
        found = DBOS.get_workflow_status(run_id)
        if found is None:
            raise KeyError(f"no durable run with id {run_id!r}")
        return run_info(found)

    def list_runs(self, *, status: str | None = None, limit: int = 100) -> list[RunInfo]:
        """The newest runs first, optionally only those with ``status``."""
        self._require_launched()
        found = DBOS.list_workflows(
            name=WORKFLOW_NAME, status=status, limit=limit, sort_desc=True, load_output=False
        )
        return [run_info(w) for w in found]

    def recover(self, worker_id: str, *, force: bool = False) -> list[str]:
        """Hand a dead worker's unfinished runs back to the queue now (live workers do it after
        ``dead_after``); their run ids. A worker with a fresh lease is refused unless ``force``."""
        self._require_launched()
        self.liveness.check_recoverable(worker_id, force=force)
        return recover_pending_runs(worker_id)

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
        self._require_launched()
        return prune(
            DBOS,
            WORKFLOW_NAME,
            keep_last=keep_last,
            older_than=older_than,
            ensemble=ensemble,
            kept=self._kept,
        )

    def cancel(self, run_id: str) -> None:
        """Stop ``run_id``: no further step of it is checkpointed (a step running then is refused
        at its write); it can be resumed later with DBOS tools."""
        self._require_launched()
        DBOS.cancel_workflow(run_id)

    def _require_launched(self) -> None:
        if not self._launched:
            raise ConfigurationError("the durable runtime is not launched: call launch() first")


async def _result_of(handle: Any, run_id: str) -> EnsembleOutput:
    try:
        result = await handle.get_result()
    except RunFailed as recorded:
        failure = await DBOS.get_event_async(run_id, FAILURE_KEY, timeout_seconds=0)
        raise failure_error(run_id, failure, recorded) from None
    return output_from(result, run_id)


async def _recorded_run(
    run_id: str | None, name: str, inputs: Mapping[str, Any] | None
) -> Any | None:
    """The run already recorded under ``run_id`` (None if new); refused if it did other work."""
    if not run_id:
        return None
    found = await DBOS.list_workflows_async(workflow_ids=[run_id], load_output=False)
    refuse_changed_reuse(found, run_id, name, inputs)
    return found[0] if found else None


def _sync(coro: Coroutine[Any, Any, T]) -> T:
    return run_on_background_loop(coro)


def _report_other_formats() -> list[RunInfo]:
    """Name the unfinished runs this code cannot resume (started by another checkpoint format)."""
    found = DBOS.list_workflows(
        name=WORKFLOW_NAME,
        status=["PENDING", "ENQUEUED"],
        load_input=False,
        load_output=False,
        limit=1000,
    )
    other = [w for w in found if w.app_version not in (None, "", CHECKPOINT_FORMAT)]
    if other:
        shown = ", ".join(f"{w.workflow_id} ({w.app_version})" for w in other[:10])
        _log.warning(
            f"{len(other)} durable runs left unresumed, started with another checkpoint format "
            f"than {CHECKPOINT_FORMAT}: {shown}; finish them with the version that started "
            "them, or cancel them"
        )
    return [run_info(w) for w in other]


def _quiet_dbos_logs() -> None:
    import logging

    logging.getLogger("dbos").setLevel(logging.WARNING)


__all__ = [
    "DATABASE_ENV",
    "DEFAULT_DATABASE_URL",
    "WORKER_ENV",
    "DurableRunError",
    "DurableRuntime",
    "RunInfo",
    "database_url",
]
