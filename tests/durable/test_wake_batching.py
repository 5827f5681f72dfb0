"""A busy worker gathers its freed slots before polling (``durable/_wake.py``): new work wakes
the queue poll at once, a freed slot once a quarter of the slots are free or ``LINGER`` after
the first, a worker with no free slot sleeps on, and stopping always ends the wait.

(That a woken worker really takes work, on SQLite and Postgres, is in test_fresh_and_wake.py.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agentensemble.durable import _wake
from agentensemble.durable._wake import _SLOT, _WORK, answer_to_wake, batch_of


@pytest.mark.parametrize(
    ("kind", "free", "batch", "answer"),
    [
        (_WORK, 1, 4, "poll"),  # new work: at once, whatever is free
        (_WORK, 0, 4, "sleep"),  # no free slot: a finished run will wake it
        (_SLOT, 0, 4, "sleep"),
        (_SLOT, 1, 4, "linger"),  # one slot of a quarter: wait for more, a while
        (_SLOT, 3, 4, "linger"),
        (_SLOT, 4, 4, "poll"),  # a quarter free: poll, claiming a run per free slot
        (_SLOT, 9, 4, "poll"),
        (_SLOT, 1, 1, "poll"),  # few slots (worker_concurrency < 8): every freed slot polls
    ],
)
def test_a_wake_polls_lingers_or_sleeps(kind: int, free: int, batch: int, answer: str) -> None:
    assert answer_to_wake(kind, free, batch) == answer


@pytest.mark.parametrize(("slots", "batch"), [(1, 1), (4, 1), (7, 1), (8, 2), (16, 4), (64, 16)])
def test_a_batch_is_a_quarter_of_the_slots(slots: int, batch: int) -> None:
    assert batch_of(slots) == batch


class Waiter:
    """A thread named as DBOS's queue thread, waiting on a wakeable stop event."""

    def __init__(self, free: int, batch: int) -> None:
        self.event = _wake._WakeableEvent()
        self.event._queue_thread = "queue-worker-test"
        self.event._free_slots = lambda: free
        self.event._batch = batch
        self.stopped: list[bool] = []
        self.thread = threading.Thread(target=self._wait, name="queue-worker-test", daemon=True)

    def _wait(self) -> None:
        self.stopped.append(self.event.wait(timeout=120))

    def __enter__(self) -> Waiter:
        self.thread.start()
        return self

    def ended(self, within: float = 30) -> bool:
        self.thread.join(within)
        return not self.thread.is_alive()

    def __exit__(self, *exc: object) -> None:
        self.event.set()
        self.thread.join(30)


@pytest.fixture(autouse=True)
def no_pending_wake(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_wake, "_pending", [_wake._NONE])
    monkeypatch.setattr(_wake._WakeableEvent, "_last", 0.0)
    yield


def test_new_work_ends_the_wait_of_a_worker_with_a_free_slot() -> None:
    with Waiter(free=1, batch=4) as waiter:
        _wake.wake()
        assert waiter.ended()
    assert waiter.stopped == [False]  # woken, not stopped: DBOS's loop polls


def test_a_freed_slot_below_the_batch_ends_the_wait_after_lingering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_wake, "LINGER", 0.05)
    with Waiter(free=1, batch=4) as waiter:
        _wake._slot_freed()
        assert waiter.ended()  # within LINGER, far before the 120 s poll interval
    assert waiter.stopped == [False]


def test_a_freed_slot_below_the_batch_lingers_until_new_work_comes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_wake, "LINGER", 60.0)
    with Waiter(free=1, batch=4) as waiter:
        _wake._slot_freed()
        assert not waiter.ended(within=0.3)  # lingering: one slot is not worth a poll yet
        _wake.wake()
        assert waiter.ended()
    assert waiter.stopped == [False]


def test_a_worker_with_no_free_slot_sleeps_on_until_stopped() -> None:
    with Waiter(free=0, batch=1) as waiter:
        _wake.wake()
        _wake._slot_freed()
        assert not waiter.ended(within=0.3)
        waiter.event.set()
        assert waiter.ended()
    assert waiter.stopped == [True]
