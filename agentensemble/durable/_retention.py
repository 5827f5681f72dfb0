"""Retention: finished runs and their step records are deleted by age and by count per ensemble.

A run still running, queued or waiting for a review (status PENDING or ENQUEUED) is never
touched: only runs DBOS records as finished (SUCCESS, ERROR, CANCELLED, or given up after too
many recoveries) are candidates. Deleting a run removes its inputs, outputs, steps, events
(reviews) and messages, and the runs it started (forks keep their own record).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from agentensemble.durable._kept import KeptBytes
from agentensemble.durable._reuse import run_arguments
from agentensemble.errors import ConfigurationError
from agentensemble.logging import get_logger

_log = get_logger()

FINISHED = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
_BATCH = 500  # runs read per query, deleted per transaction


@dataclass(frozen=True)
class Retention:
    """How long finished runs are kept: at most ``keep_last`` per ensemble (the newest), and none
    finished more than ``older_than`` ago. Either may be None (no limit of that kind).

    Given to ``DurableRuntime(retention=...)``, a worker prunes every ``every`` (default an hour)
    while it runs, so a long-lived worker's database stops growing.
    """

    keep_last: int | None = None
    older_than: timedelta | None = None
    every: timedelta = timedelta(hours=1)

    def __post_init__(self) -> None:
        if self.keep_last is None and self.older_than is None:
            raise ConfigurationError("Retention needs keep_last, older_than, or both")
        if self.keep_last is not None and self.keep_last < 0:
            raise ConfigurationError(f"keep_last must be >= 0, got {self.keep_last}")
        if self.older_than is not None and self.older_than <= timedelta(0):
            raise ConfigurationError(f"older_than must be positive, got {self.older_than}")
        if self.every <= timedelta(0):
            raise ConfigurationError(f"every must be positive, got {self.every}")


def runs_to_prune(
    finished: Sequence[Any],
    *,
    keep_last: int | None,
    older_than: timedelta | None,
    ensemble: str | None = None,
    now_ms: float | None = None,
) -> list[str]:
    """The ids among ``finished`` (DBOS statuses of finished runs) that retention removes: per
    ensemble, every run past the newest ``keep_last``, and every run older than ``older_than``.
    A pure rule: the callers fetch and delete."""
    now_ms = time.time() * 1000 if now_ms is None else now_ms
    cutoff = None if older_than is None else now_ms - older_than.total_seconds() * 1000
    by_ensemble: dict[str, list[Any]] = defaultdict(list)
    for status in finished:
        if str(status.status) not in FINISHED:
            continue  # never a run in progress, queued or waiting for a review
        args = run_arguments(status)
        name = str(args[0]) if args else ""
        if ensemble is None or name == ensemble:
            by_ensemble[name].append(status)
    doomed: list[str] = []
    for runs in by_ensemble.values():
        runs.sort(key=lambda s: s.created_at or 0, reverse=True)  # newest first
        for position, status in enumerate(runs):
            past_count = keep_last is not None and position >= keep_last
            finished_at = status.updated_at or status.created_at or 0
            too_old = cutoff is not None and finished_at < cutoff
            if past_count or too_old:
                doomed.append(str(status.workflow_id))
    return doomed


def prune(
    api: Any,
    workflow_name: str,
    *,
    keep_last: int | None = None,
    older_than: timedelta | None = None,
    ensemble: str | None = None,
    kept: KeptBytes | None = None,
) -> int:
    """Delete the runs of ``workflow_name`` that retention removes; how many were deleted.

    ``api`` is ``DBOS`` in a worker or a ``DBOSClient`` anywhere else: both list runs and delete
    them (with their inputs, outputs, steps, events and messages) the same way. ``kept``: the
    database's attachment bytes, of which those no remaining run refers to are dropped."""
    Retention(keep_last=keep_last, older_than=older_than)  # the same checks as a worker's
    finished: list[Any] = []
    while True:
        page = api.list_workflows(
            name=workflow_name,
            status=list(FINISHED),
            limit=_BATCH,
            offset=len(finished),
            sort_desc=True,
            load_output=False,
        )
        finished.extend(page)
        if len(page) < _BATCH:
            break
    doomed = runs_to_prune(finished, keep_last=keep_last, older_than=older_than, ensemble=ensemble)
    for start in range(0, len(doomed), _BATCH):
        api.delete_workflows(doomed[start : start + _BATCH], delete_children=True)
    if kept is not None:
        dropped = kept.prune(doomed)
        if dropped:
            _log.info("durable_attachments_dropped", attachments=dropped)
    return len(doomed)


class PruneTimer:
    """A worker's retention: ``action`` (a prune) every ``every`` on a daemon thread, first one
    ``every`` after start; a failed prune is logged and retried at the next tick, never fatal."""

    def __init__(self, every: timedelta, action: Callable[[], int]) -> None:
        self._every = every.total_seconds()
        self._action = action
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="agentensemble-retention",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            try:
                removed = self._action()
            except Exception as error:  # the database may be briefly away: try next time
                _log.warning("durable_retention_failed", error=f"{type(error).__name__}: {error}")
            else:
                if removed:
                    _log.info("durable_runs_pruned", runs=removed)


__all__ = ["FINISHED", "PruneTimer", "Retention", "prune", "runs_to_prune"]
