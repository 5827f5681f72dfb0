"""The daemon worker pool that runs sync tool bodies, sync task handlers and sync reviewers.

What the pool must keep from a thread per call: every worker is a daemon (nobody waits for a
running sync tool), and a busy or blocked worker never makes another call wait. What it adds:
an idle worker is reused, and idle workers expire.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _fds import is_open

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble._base.threads import _ONE, DaemonPool, _LockWorker, _PipeWorker
from agentensemble.testing import ScriptedChatModel, tool_calls

LIMIT = 10.0  # seconds: a bound on any wait here, never an expectation


def wait_until(ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + LIMIT
    while not ready():
        assert time.monotonic() < deadline, "still waiting after the limit"
        time.sleep(0.005)


WORKER_TYPES = [_PipeWorker, _LockWorker] if hasattr(select, "poll") else [_LockWorker]


def pool_of(worker_type: type[Any], name: str, idle_seconds: float) -> DaemonPool:
    """A pool whose workers wake up through ``worker_type`` (a pipe, or the portable lock)."""
    pool = DaemonPool(name, idle_seconds=idle_seconds)
    pool._worker_type = worker_type
    return pool


@pytest.fixture(params=WORKER_TYPES, ids=lambda t: t.__name__)
def pool(request: pytest.FixtureRequest) -> Iterator[DaemonPool]:
    yield pool_of(request.param, "test-worker", LIMIT)


def current_thread() -> threading.Thread:
    return threading.current_thread()


def test_workers_are_daemon_threads(pool: DaemonPool) -> None:
    worker = pool.submit(current_thread).result(LIMIT)
    assert worker.daemon
    assert worker is not threading.current_thread()
    assert worker.name.startswith("test-worker-")


def test_an_idle_worker_is_reused(pool: DaemonPool) -> None:
    first = pool.submit(current_thread).result(LIMIT)
    wait_until(lambda: not pool.busy_threads())  # back in the pool
    second = pool.submit(current_thread).result(LIMIT)
    assert second is first


def test_a_blocked_worker_never_starves_other_calls(pool: DaemonPool) -> None:
    release = threading.Event()
    blocked = pool.submit(release.wait, LIMIT)
    # five more calls that can only finish together: each waits for all the others
    barrier = threading.Barrier(5, timeout=LIMIT)
    others = [pool.submit(barrier.wait) for _ in range(5)]
    assert sorted(f.result(LIMIT) for f in others) == [0, 1, 2, 3, 4]
    assert not blocked.done()  # still blocked while the others ran
    release.set()
    assert blocked.result(LIMIT) is True


def test_errors_reach_the_caller_and_the_worker_keeps_serving(pool: DaemonPool) -> None:
    def fail() -> None:
        raise SystemExit("a tool called sys.exit")

    with pytest.raises(SystemExit, match=r"sys\.exit"):
        pool.submit(fail).result(LIMIT)
    assert pool.submit(lambda: "still here").result(LIMIT) == "still here"


def test_context_variables_reach_the_worker(pool: DaemonPool) -> None:
    import contextvars

    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")
    request_id.set("r-42")
    assert pool.submit(request_id.get).result(LIMIT) == "r-42"


@pytest.mark.parametrize("worker_type", WORKER_TYPES, ids=lambda t: t.__name__)
def test_idle_workers_expire(worker_type: type[Any]) -> None:
    pool = pool_of(worker_type, "short-lived", 0.01)
    worker = pool.submit(current_thread).result(LIMIT)
    worker.join(LIMIT)
    assert not worker.is_alive()
    assert pool.submit(lambda: "a new worker starts").result(LIMIT) == "a new worker starts"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_with_an_empty_pool_that_works(pool: DaemonPool) -> None:
    pool.submit(current_thread).result(LIMIT)
    wait_until(lambda: not pool.busy_threads())  # an idle worker, which the child lacks
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        try:
            ok = pool.submit(lambda: "child").result(LIMIT) == "child"
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_sync_tools_of_one_turn_meet_at_a_barrier_turn_after_turn() -> None:
    # four calls per turn can only pass the barrier together, in the first turn and the next
    barrier = threading.Barrier(4, timeout=30)
    workers: set[threading.Thread] = set()

    @tool
    def meet(n: int) -> str:
        """Waits until every call of the turn has arrived."""
        workers.add(threading.current_thread())
        barrier.wait()
        return str(n)

    turn = tool_calls(*(("meet", {"n": i}) for i in range(4)))
    model = ScriptedChatModel([turn, turn, "done"])
    agent = Agent(role="Worker", goal="Meet", tools=[meet], llm=model)
    output = Ensemble(tasks=[Task(description="Meet twice", agent=agent)]).run()

    records = output.task_outputs[0].tool_calls
    assert [r.output for r in records] == ["0", "1", "2", "3"] * 2
    assert all(worker.daemon for worker in workers)
    assert all(worker.name.startswith("agentensemble-worker-") for worker in workers)


def test_a_hand_back_runs_once_the_worker_is_idle_again(pool: DaemonPool) -> None:
    # the result of a call is handed back as the worker's last step, so the woken caller never
    # waits for the worker's bookkeeping: by then the worker counts as idle, not busy
    seen: list[bool] = []
    handed = threading.Event()

    def job() -> Callable[[], None]:
        def hand_back() -> None:
            seen.append(threading.current_thread() in pool.busy_threads())
            handed.set()

        return hand_back

    pool.run_soon(job)
    assert handed.wait(LIMIT)
    assert seen == [False]
    # an idle worker takes the next job: the pool did not start another thread for it
    worker = pool.submit(current_thread).result(LIMIT)
    assert pool.submit(current_thread).result(LIMIT) is worker


def test_a_failing_hand_back_leaves_the_worker_serving(pool: DaemonPool) -> None:
    def job() -> Callable[[], None]:
        def hand_back() -> None:
            raise RuntimeError("the loop is gone")

        return hand_back

    pool.run_soon(job)
    assert pool.submit(lambda: "still here").result(LIMIT) == "still here"


def test_submit_hands_its_result_back_after_the_worker_is_idle(pool: DaemonPool) -> None:
    first = pool.submit(current_thread).result(LIMIT)
    assert first not in pool.busy_threads()  # no wait needed: idle before the result arrived
    assert pool.submit(current_thread).result(LIMIT) is first


class RecordedPipeWorker(_PipeWorker):
    """A pipe worker that the test can find (to look at its pipe)."""

    made: list[RecordedPipeWorker] = []

    def __init__(self) -> None:
        super().__init__()
        self.made.append(self)

    def fds(self) -> tuple[int, int]:
        return self._read_fd, self._write_fd


@pytest.fixture
def recorded() -> Iterator[list[RecordedPipeWorker]]:
    RecordedPipeWorker.made = []
    yield RecordedPipeWorker.made


needs_poll = pytest.mark.skipif(not hasattr(select, "poll"), reason="pipe workers need poll")


@needs_poll
def test_an_expired_worker_closes_its_pipe(recorded: list[RecordedPipeWorker]) -> None:
    pool = pool_of(RecordedPipeWorker, "short-lived", 0.01)
    worker = pool.submit(current_thread).result(LIMIT)
    (made,) = recorded
    assert all(is_open(fd) for fd in made.fds())  # it was open while the worker lived
    worker.join(LIMIT)
    assert not worker.is_alive()
    assert not any(is_open(fd) for fd in made.fds())


@pytest.mark.parametrize("worker_type", WORKER_TYPES, ids=lambda t: t.__name__)
def test_a_job_handed_over_just_as_the_worker_expires_still_runs(worker_type: type[Any]) -> None:
    # the worker's wait times out, but before it leaves the pool a call takes it: it must wait
    # for that call's wake-up and run the job, or the call would never finish
    handed: list[Any] = []
    pools: list[DaemonPool] = []

    class LateWorker(worker_type):  # type: ignore[misc]
        def wait(self, timeout_ms: int) -> bool:
            if not handed:  # first wait: a call arrives, then the timeout "fires"
                handed.append(pools[0].submit(current_thread))
                return False
            return bool(super().wait(timeout_ms))

    pools.append(pool_of(LateWorker, "late", LIMIT))
    first = pools[0].submit(current_thread).result(LIMIT)
    wait_until(lambda: bool(handed))
    assert handed[0].result(LIMIT) is first  # the same thread ran it


@needs_poll
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_closes_the_pipes_of_the_parents_workers(
    recorded: list[RecordedPipeWorker],
) -> None:
    pool = pool_of(RecordedPipeWorker, "forked", LIMIT)
    pool.submit(current_thread).result(LIMIT)
    wait_until(lambda: not pool.busy_threads())
    (made,) = recorded
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        os._exit(1 if any(is_open(fd) for fd in made.fds()) else 0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert all(is_open(fd) for fd in made.fds())  # the parent's worker still has its pipe


@needs_poll
def test_a_process_out_of_file_descriptors_still_gets_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a burst of blocked sync tools may use up the descriptors: a worker without a pipe waits on
    # a lock instead, and the call runs (it must not fail for want of a wake-up pipe)
    def no_pipe() -> tuple[int, int]:
        raise OSError(24, "Too many open files")

    pool = pool_of(_PipeWorker, "no-fds", LIMIT)
    monkeypatch.setattr(os, "pipe", no_pipe)
    if hasattr(os, "eventfd"):  # a worker's wake-up is an eventfd where there is one
        monkeypatch.setattr(os, "eventfd", lambda *_: no_pipe()[0])
    worker = pool.submit(current_thread).result(LIMIT)
    wait_until(lambda: not pool.busy_threads())
    assert pool.submit(current_thread).result(LIMIT) is worker  # and it is reused


@pytest.mark.parametrize("worker_type", WORKER_TYPES, ids=lambda t: t.__name__)
def test_a_wake_up_lost_to_an_interrupt_in_the_caller_still_runs_the_job(
    worker_type: type[Any],
) -> None:
    # Ctrl-C may land in run_soon after the job was handed to a worker and before it was woken:
    # the worker runs that job once its wait runs out, and goes on serving (never stuck)
    interrupted: list[bool] = []

    class Interrupted(worker_type):  # type: ignore[misc]
        def wake(self) -> None:
            if not interrupted:
                interrupted.append(True)
                raise KeyboardInterrupt
            super().wake()

    pool = pool_of(Interrupted, "interrupted", 0.05)
    first = pool.submit(current_thread).result(LIMIT)
    wait_until(lambda: not pool.busy_threads())
    ran = threading.Event()
    with pytest.raises(KeyboardInterrupt):
        pool.run_soon(lambda: ran.set())
    assert ran.wait(LIMIT)  # after its wait ran out (0.05 s here)
    assert pool.submit(current_thread).result(LIMIT) is first  # and it serves on


@needs_poll
def test_a_late_wake_up_with_no_job_is_skipped(recorded: list[RecordedPipeWorker]) -> None:
    pool = pool_of(RecordedPipeWorker, "late-wake", LIMIT)
    first = pool.submit(current_thread).result(LIMIT)
    wait_until(lambda: not pool.busy_threads())
    (made,) = recorded
    os.write(made.fds()[1], _ONE)  # a wake-up with no job: the worker must wait on
    time.sleep(0.05)
    assert first.is_alive()
    assert pool.submit(current_thread).result(LIMIT) is first


@pytest.mark.parametrize("worker_type", WORKER_TYPES, ids=lambda t: t.__name__)
def test_a_worker_taken_without_a_job_leaves_when_its_wait_runs_out(
    worker_type: type[Any],
) -> None:
    # an interrupt between taking an idle worker and handing it its job leaves it with none
    pool = pool_of(worker_type, "orphan", 0.05)
    first = pool.submit(current_thread).result(LIMIT)
    wait_until(lambda: not pool.busy_threads())
    with pool._lock:
        pool._idle.pop()
    first.join(LIMIT)
    assert not first.is_alive()
    assert pool.submit(current_thread).result(LIMIT) is not first


@needs_poll
def test_without_eventfd_a_worker_wakes_through_a_pipe_and_closes_both_ends(
    monkeypatch: pytest.MonkeyPatch, recorded: list[RecordedPipeWorker]
) -> None:
    monkeypatch.delattr(os, "eventfd", raising=False)  # as on macOS
    pool = pool_of(RecordedPipeWorker, "piped", 0.05)
    first = pool.submit(current_thread).result(LIMIT)
    wait_until(lambda: not pool.busy_threads())
    assert pool.submit(current_thread).result(LIMIT) is first  # woken through its pipe
    (made,) = recorded
    read_fd, write_fd = made.fds()
    assert read_fd != write_fd
    first.join(LIMIT)
    assert not first.is_alive()
    assert not any(is_open(fd) for fd in (read_fd, write_fd))
