"""Worker leases: which workers are alive, and taking over the runs of those that died.

Self-hosted DBOS never notices that a worker died (its hosted Conductor does): the runs the
worker held stay PENDING under its id until it starts again. Here every launched
``DurableRuntime`` keeps a lease in the table ``agentensemble_workers`` of the same database
(SQLite or Postgres) and renews it every ``heartbeat_interval`` seconds. A lease not renewed
for ``dead_after`` seconds belongs to a dead worker: the first live worker to claim it (one
conditional UPDATE, so of two claimers one wins) hands the dead worker's PENDING runs back to
the queue, where any live worker dequeues them, and then deletes the lease.

This is a liveness table only, never a checkpoint store or a queue: runs, steps and the queue
stay DBOS's. Every timestamp is the database's clock (``now()``, ``julianday('now')``), never a
worker's, so workers on different machines agree on what is stale.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator

from agentensemble.durable import _dbos
from agentensemble.durable._leases import Lease, Leases
from agentensemble.durable._wake import notify, wake
from agentensemble.errors import ConfigurationError
from agentensemble.logging import get_logger

CLAIMS_PER_BEAT = 5  # bounded work per heartbeat; the next beat takes the rest

logger = get_logger()


HEARTBEAT_ENV = "AGENTENSEMBLE_HEARTBEAT_INTERVAL"
DEAD_AFTER_ENV = "AGENTENSEMBLE_DEAD_AFTER"


def intervals(heartbeat_interval: float | None, dead_after: float | None) -> tuple[float, float]:
    """The heartbeat interval and ``dead_after``: each the argument, else the environment (the
    worker command's ``--heartbeat-interval``/``--dead-after``), else 5 s / 30 s; validated."""
    chosen = (
        seconds(heartbeat_interval, HEARTBEAT_ENV, 5.0),
        seconds(dead_after, DEAD_AFTER_ENV, 30.0),
    )
    validate_intervals(*chosen)
    return chosen


def seconds(given: float | None, env: str, default: float) -> float:
    """``given``, else the number in ``$env``, else ``default`` (a clear error if not a number)."""
    if given is not None:
        return float(given)
    raw = os.environ.get(env)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(f"${env} must be a number of seconds, got {raw!r}") from None


def validate_intervals(heartbeat_interval: float, dead_after: float) -> None:
    """Both positive, and ``dead_after`` at least three heartbeats (one late beat is no death)."""
    if not 0 < heartbeat_interval < math.inf:
        raise ConfigurationError(
            f"heartbeat_interval must be a positive number of seconds, got {heartbeat_interval}"
        )
    if not 0 < dead_after < math.inf:
        raise ConfigurationError(
            f"dead_after must be a positive number of seconds, got {dead_after}"
        )
    if dead_after < 3 * heartbeat_interval * (1 - 1e-9):  # 0.6 is 3 x 0.2 despite floats
        raise ConfigurationError(
            f"dead_after ({dead_after} s) must be at least 3 x heartbeat_interval "
            f"({heartbeat_interval} s): a worker late by one heartbeat is not dead"
        )


class Liveness:
    """A runtime's liveness settings, and the heartbeat of its current launch.

    ``heartbeat_interval`` and ``dead_after``: the argument, else the environment (the worker
    command's ``--heartbeat-interval``/``--dead-after``), else 5 s / 30 s; validated at once.
    """

    def __init__(
        self, url: str, app_name: str, worker_id: str, heartbeat_interval: float | None = None,
        dead_after: float | None = None, take_over: bool = True,
    ) -> None:  # fmt: skip
        self.url, self.app_name, self.worker_id = url, app_name, worker_id
        self.heartbeat_interval, self.dead_after = intervals(heartbeat_interval, dead_after)
        self.take_over = take_over
        self.heartbeat: Heartbeat | None = None

    @contextlib.contextmanager
    def launching(self) -> Iterator[None]:
        """Write the lease first and beat while the block launches DBOS (which resumes this
        worker's own runs, so nobody may claim them meanwhile); launching again replaces it."""
        self.stop()
        self.heartbeat = Heartbeat(
            self.url,
            self.app_name,
            self.worker_id,
            heartbeat_interval=self.heartbeat_interval,
            dead_after=self.dead_after,
            take_over=self.take_over,
        )
        with self.heartbeat.launching():
            yield

    def stop(self) -> None:
        """Stop the heartbeat of the current launch (its lease stays)."""
        if self.heartbeat is not None:
            self.heartbeat.stop()

    @property
    def lost(self) -> bool:
        """Another worker declared this one dead and took its runs; it takes no more work."""
        return self.heartbeat is not None and self.heartbeat.lost.is_set()

    def refuse_if_lost(self) -> None:
        """Raise once this worker was declared dead: a run it started would be nobody's."""
        if self.heartbeat is not None:
            self.heartbeat.refuse_if_lost()

    def check_recoverable(self, worker_id: str, *, force: bool = False) -> None:
        """Raise for this worker itself, or one whose lease says it is alive (unless ``force``):
        recovering it would run its runs twice."""
        if worker_id == self.worker_id:
            raise ConfigurationError(
                f"worker {worker_id!r} is this process: its runs resume when it launches"
            )
        if self.heartbeat is not None and not force:
            self.heartbeat.refuse_if_alive(worker_id)


class Heartbeat:
    """The daemon thread of one launched runtime: renew its lease, take over dead workers.

    ``launching()`` writes the lease (refusing a live process under the same id) and beats
    while DBOS launches; once DBOS runs, dead workers are taken over (with ``take_over``), and
    if this worker finds its own lease gone, ``lost`` is set and DBOS stops dequeuing runs.
    """

    def __init__(
        self, url: str, app_name: str, worker_id: str, *, heartbeat_interval: float,
        dead_after: float, take_over: bool = True,
    ) -> None:  # fmt: skip
        self.url, self.app_name, self.worker_id = url, app_name, worker_id
        self.heartbeat_interval, self.dead_after = heartbeat_interval, dead_after
        self.take_over = take_over
        self.lost = threading.Event()
        self._running = False  # DBOS launched: recovery works, dequeuing can be stopped
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._leases: Leases | None = None
        self._incarnation = ""
        self._thread = threading.Thread(
            target=self._run, name=f"agentensemble-heartbeat-{worker_id}", daemon=True
        )

    def start(self) -> None:
        """Write this worker's lease and start renewing it."""
        leases = Leases(self.url, self.app_name)
        try:
            self._incarnation = leases.acquire(self.worker_id, self.dead_after)
        except BaseException:
            leases.close()
            raise
        self._leases = leases
        self._thread.start()

    @contextlib.contextmanager
    def launching(self) -> Iterator[None]:
        """Hold the lease (``start``) while the block launches DBOS; stop if the launch fails."""
        self.start()
        try:
            yield
        except BaseException:
            self.stop()
            raise
        with self._lock:
            self._running = True
            lost = self.lost.is_set()
        if lost:  # declared dead while launching: take nothing
            stop_dequeuing()

    def stop(self) -> None:
        """Stop the thread and close the connections; the lease stays (see ``shutdown``)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        if self._leases is not None:
            self._leases.close()
            self._leases = None

    def refuse_if_alive(self, worker_id: str) -> None:
        """Raise if ``worker_id``'s lease says it is alive (recovering it would run runs twice)."""
        leases = self._leases
        lease = leases.read(worker_id) if leases is not None else None
        if leases is not None and lease is not None and leases.is_live(lease, self.dead_after):
            raise ConfigurationError(
                f"worker {worker_id!r} is alive ({lease.describe()}); recovering its runs "
                "would run them twice. Stop it first, or force it (--force) if you know it is "
                "dead"
            )

    def refuse_if_lost(self) -> None:
        """Raise once this worker was declared dead: it starts no run any more."""
        if self.lost.is_set():
            raise ConfigurationError(
                f"worker {self.worker_id!r} lost its lease (declared dead, its runs taken "
                "over): it runs nothing more; start it again"
            )

    def _run(self) -> None:
        while not self._stop.wait(self.heartbeat_interval):
            leases = self._leases
            if leases is None:
                return
            try:
                alive = leases.beat(self.worker_id, self._incarnation)
            except Exception as error:  # the database may come back; the lease may not
                logger.warning(
                    "worker_heartbeat_failed", worker_id=self.worker_id, error=str(error)
                )
                continue
            if not alive:
                self._lose()
                return
            if self.take_over and self._running:
                try:
                    self.take_over_dead(leases)
                except Exception as error:
                    logger.warning(
                        "worker_takeover_failed", worker_id=self.worker_id, error=str(error)
                    )

    def _lose(self) -> None:
        with self._lock:
            self.lost.set()
            running = self._running
        logger.error(
            "worker_lease_lost",
            worker_id=self.worker_id,
            detail=f"another worker declared this one dead (no heartbeat for {self.dead_after}"
            " s) and took over its runs; this worker takes no more work: restart it",
        )
        if running:
            try:
                stop_dequeuing()
            except Exception as error:
                logger.error("worker_stop_failed", worker_id=self.worker_id, error=str(error))

    def take_over_dead(self, leases: Leases) -> dict[str, list[str]]:
        """Claim up to ``CLAIMS_PER_BEAT`` stale leases, hand their runs back; ids by worker."""
        taken: dict[str, list[str]] = {}
        for lease in leases.stale(self.dead_after, besides=self.worker_id, limit=CLAIMS_PER_BEAT):
            if self._stop.is_set():
                break
            if not leases.claim(lease, self.worker_id, self.dead_after):
                continue  # another worker won it
            taken[lease.worker_id] = runs = recover_pending_runs(lease.worker_id)
            _log_takeover(lease, self.worker_id, runs)
            left = pending_runs_of(lease.worker_id)
            if not left:
                leases.release(lease, self.worker_id)
                continue
            # runs of another application version (other code, another DBOS): only a worker
            # of that version may run them; the claimed lease goes stale again for one to take
            logger.warning(
                "worker_runs_left_for_another_version",
                dead_worker=lease.worker_id,
                by_worker=self.worker_id,
                runs=len(left),
                versions=sorted(set(left.values())),
            )
        return taken


def _log_takeover(lease: Lease, by: str, runs: list[str]) -> None:
    log = logger.warning if runs else logger.info
    log(
        "worker_taken_over",
        dead_worker=lease.worker_id,
        by_worker=by,
        runs=len(runs),
        run_ids=runs[:20],
        last_seen=lease.describe(),
    )


def recover_pending_runs(worker_id: str) -> list[str]:
    """Hand ``worker_id``'s PENDING runs back to the queue; their run ids.

    DBOS has no public API for this yet (``_dbos.recover_pending``): it re-enqueues a PENDING
    run only while its row still names ``worker_id`` (so two recoverers cannot both hand it
    back), and the queue's ENQUEUED->PENDING dequeue admits one runner.
    """
    run_ids = _dbos.recover_pending(worker_id)
    if run_ids:  # back on the queue: wake this worker's poll, and the others' on Postgres
        wake()
        notify(_dbos.system_engine(), _dbos.system_app_name())
    return run_ids


def pending_runs_of(worker_id: str) -> dict[str, str]:
    """The runs still PENDING under ``worker_id``: run id -> application version."""
    from dbos import DBOS

    found = DBOS.list_workflows(
        status="PENDING", executor_id=worker_id, load_input=False, load_output=False
    )
    return {status.workflow_id: str(status.app_version) for status in found}


def stop_dequeuing() -> None:
    """Stop this process's DBOS from taking queued runs (and scheduled work); runs in flight go
    on until their next checkpoint, which DBOS refuses once another worker owns the run.

    DBOS has no public switch for this: its queue threads (and pollers) stop on the events
    ``DBOS.destroy`` sets first (``_dbos.stop_background_threads``).
    """
    _dbos.stop_background_threads()


__all__ = [
    "DEAD_AFTER_ENV",
    "HEARTBEAT_ENV",
    "Heartbeat",
    "Liveness",
    "intervals",
    "recover_pending_runs",
    "seconds",
    "stop_dequeuing",
    "validate_intervals",
]
