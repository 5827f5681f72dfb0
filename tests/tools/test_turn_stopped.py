"""A turn's ``stopped`` event makes its Condition on first use and behaves as an Event."""

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
    for _ in range(20):  # the Condition is made by whichever thread comes first
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


def test_unknown_attributes_are_still_missing() -> None:
    stopped = ToolContext().stopped
    assert not hasattr(stopped, "no_such_attribute")


def test_a_turn_uses_the_lazy_event_on_this_python() -> None:
    # the stock Event holds just these two: the lazy one mirrors them (else it falls back)
    from agentensemble.tools.context import _turn_event, _TurnStopped

    assert set(vars(threading.Event())) == {"_cond", "_flag"}
    assert _turn_event is _TurnStopped
    assert type(ToolContext().stopped) is _TurnStopped
