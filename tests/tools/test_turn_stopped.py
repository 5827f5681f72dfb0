"""A turn's ``stopped`` event is a stock ``threading.Event``: set from any thread, seen by all."""

from __future__ import annotations

import threading

from agentensemble.tools.context import ToolContext

BOUND = 10  # seconds


def test_a_turns_stopped_is_an_event_that_sets_clears_and_times_out() -> None:
    stopped = ToolContext().stopped
    assert isinstance(stopped, threading.Event) and not stopped.is_set()
    assert stopped.wait(0.01) is False
    stopped.set()
    assert stopped.is_set() and stopped.wait(0) is True
    stopped.clear()
    assert not stopped.is_set()
    assert ToolContext().stopped is not ToolContext().stopped


def test_set_from_one_thread_wakes_every_thread_waiting_on_a_fresh_event() -> None:
    for _ in range(20):  # a fresh event each time, waited on by four threads at once
        stopped = ToolContext().stopped
        ready = threading.Barrier(5)
        woke: list[bool] = []

        threads = [
            threading.Thread(target=_wait_for, args=(stopped, ready, woke)) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        ready.wait(BOUND)
        stopped.set()
        for thread in threads:
            thread.join(BOUND)
        assert woke == [True] * 4


def _wait_for(event: threading.Event, ready: threading.Barrier, woke: list[bool]) -> None:
    ready.wait(BOUND)
    woke.append(event.wait(BOUND))
