"""How a worker hands a sync call's result back to its event loop: the loop's inbox (one
wake-up descriptor per loop, watched with ``add_reader``, and a queue of finished calls).

What must hold: every result arrives, however many calls finish at once; the descriptor is made
once per loop and closed when the loop goes; a loop that cannot watch a descriptor, or a process
out of descriptors, still gets its results (through ``call_soon_threadsafe``); a forked child
closes the parent's; nothing of a caller (its context variables, its result) stays behind with
the loop or an idle worker.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import threading
import weakref
from typing import Any

import pytest
from _fds import is_open

from agentensemble.tools import _sync

LIMIT = 10.0  # seconds: a bound on any wait here, never an expectation


def inbox_of(loop: asyncio.AbstractEventLoop) -> _sync._Inbox | None:
    entry = _sync._inboxes.get(id(loop))
    return entry[1] if entry is not None and entry[0]() is loop else None


def run(coro: Any) -> Any:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def test_a_loop_gets_one_inbox_and_keeps_it_for_every_call() -> None:
    async def main() -> tuple[Any, Any, list[str]]:
        loop = asyncio.get_running_loop()
        assert await _sync.in_worker_thread(str.upper, "a") == "A"
        first = inbox_of(loop)
        results = [await _sync.in_worker_thread(str.upper, word) for word in "bcd"]
        return first, inbox_of(loop), results

    first, last, results = run(main())
    assert first is not None and first is last
    assert results == ["B", "C", "D"]


def test_many_calls_finishing_at_once_all_reach_their_callers() -> None:
    barrier = threading.Barrier(8, timeout=LIMIT)

    def meet(number: int) -> int:
        barrier.wait()  # all eight are running at once, so they hand back at about one time
        return number

    async def main() -> list[int]:
        calls = [_sync.in_worker_thread(meet, number) for number in range(8)]
        return await asyncio.wait_for(asyncio.gather(*calls), LIMIT)

    for _ in range(20):
        assert run(main()) == list(range(8))


def test_the_inbox_closes_its_descriptor_when_its_loop_is_gone() -> None:
    loop = asyncio.new_event_loop()
    loop.run_until_complete(_sync.in_worker_thread(str.upper, "a"))
    inbox = inbox_of(loop)
    assert inbox is not None
    fds = {inbox._read_fd, inbox._write_fd}
    assert all(is_open(fd) for fd in fds)
    loop.close()
    del loop
    gc.collect()
    assert inbox.closed
    assert not any(is_open(fd) for fd in fds)
    assert not any(entry[1] is inbox for entry in _sync._inboxes.values())


def test_a_loop_of_asyncio_run_after_another_never_piles_up_descriptors() -> None:
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for _ in range(200):
        asyncio.run(_sync.in_worker_thread(str.upper, "a"))
    gc.collect()
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) <= before + 2  # a worker's pipe may be new


class NoReaderLoop(asyncio.SelectorEventLoop):
    """A loop that cannot watch a descriptor (as the proactor loop on Windows)."""

    def add_reader(self, *args: Any) -> None:  # type: ignore[override]
        raise NotImplementedError


def test_a_loop_that_cannot_watch_a_descriptor_still_gets_its_results() -> None:
    loop = NoReaderLoop()
    try:
        for word in "ab":
            assert loop.run_until_complete(_sync.in_worker_thread(str.upper, word)) == word.upper()
        assert inbox_of(loop) is None
        assert NoReaderLoop in _sync._no_inbox
    finally:
        loop.close()


def test_a_process_out_of_descriptors_still_gets_its_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_descriptor() -> tuple[int, int]:
        raise OSError(24, "Too many open files")

    loop = asyncio.new_event_loop()
    try:
        monkeypatch.setattr(_sync, "_wake_fds", no_descriptor)
        assert loop.run_until_complete(_sync.in_worker_thread(str.upper, "a")) == "A"
        assert inbox_of(loop) is None
        monkeypatch.undo()  # descriptors again: the next call makes the loop's inbox
        assert loop.run_until_complete(_sync.in_worker_thread(str.upper, "b")) == "B"
        assert inbox_of(loop) is not None
    finally:
        loop.close()


class Settles:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.settled = threading.Event()

    def settle(self) -> None:
        self.settled.set()
        if self.fail:
            raise ValueError("a settle that fails")


def test_a_drain_cut_short_wakes_the_loop_again_for_what_is_left() -> None:
    loop = asyncio.new_event_loop()
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: errors.append(context))
    try:
        loop.run_until_complete(_sync.in_worker_thread(str.upper, "a"))
        inbox = inbox_of(loop)
        assert inbox is not None
        failing, after = Settles(fail=True), Settles()
        inbox.put(failing)  # type: ignore[arg-type]
        inbox.put(after)  # type: ignore[arg-type]

        async def until_settled() -> None:
            while not after.settled.is_set():
                await asyncio.sleep(0.001)

        loop.run_until_complete(asyncio.wait_for(until_settled(), LIMIT))
        assert failing.settled.is_set()
        assert [type(error.get("exception")) for error in errors] == [ValueError]
    finally:
        loop.close()


def test_the_loops_reader_keeps_nothing_of_the_first_callers_context() -> None:
    value: contextvars.ContextVar[object] = contextvars.ContextVar("value")

    class Held:
        pass

    loop = asyncio.new_event_loop()
    try:
        held = [Held()]
        gone = weakref.ref(held[0])

        async def first_call() -> None:
            value.set(held.pop())
            await _sync.in_worker_thread(str.upper, "a")

        loop.run_until_complete(first_call())  # this call makes the loop's inbox
        assert inbox_of(loop) is not None
        gc.collect()
        assert gone() is None  # neither the reader's handle nor the worker holds it
    finally:
        loop.close()


def test_an_idle_worker_keeps_nothing_of_its_last_call() -> None:
    class Result:
        pass

    def make() -> Result:
        return Result()

    loop = asyncio.new_event_loop()
    try:
        gone = weakref.ref(loop.run_until_complete(_sync.in_worker_thread(make)))
        gc.collect()
        assert gone() is None
    finally:
        loop.close()


def stop() -> None:
    raise StopIteration("exhausted")


def test_a_body_raising_stop_iteration_fails_the_call_instead_of_never_ending() -> None:
    # a future refuses a StopIteration: delivered as it is, the call waited forever
    async def main() -> None:
        await asyncio.wait_for(_sync.in_worker_thread(stop), LIMIT)

    with pytest.raises(RuntimeError, match="StopIteration") as raised:
        run(main())
    assert isinstance(raised.value.__cause__, StopIteration)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_closes_the_parents_inboxes_and_makes_its_own() -> None:
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_sync.in_worker_thread(str.upper, "a"))
        inbox = inbox_of(loop)
        assert inbox is not None
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through its exit code
            code = 0
            if is_open(inbox._read_fd) or _sync._inboxes:
                code = 1
            elif asyncio.run(_sync.in_worker_thread(str.upper, "b")) != "B":
                code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert is_open(inbox._read_fd)  # the parent's loop keeps its own
        assert loop.run_until_complete(_sync.in_worker_thread(str.upper, "c")) == "C"
    finally:
        loop.close()


def test_a_sync_guardrail_raising_stop_iteration_fails_its_task_instead_of_hanging() -> None:
    from agentensemble import Agent, Ensemble, Task
    from agentensemble.errors import TaskExecutionError
    from agentensemble.testing import ScriptedChatModel

    def exhausted(output: object) -> object:
        return next(iter([]))  # a StopIteration out of a sync guardrail

    agent = Agent(role="writer", goal="write", llm=ScriptedChatModel(["hello"]))
    task = Task(
        description="say hello",
        expected_output="a greeting",
        agent=agent,
        output_guardrails=[exhausted],
    )
    done: list[BaseException] = []

    def run_it() -> None:
        try:
            Ensemble(agents=[agent], tasks=[task]).run()
        except BaseException as error:  # the test looks at what the run raised
            done.append(error)

    runner = threading.Thread(target=run_it, daemon=True)
    runner.start()
    runner.join(LIMIT)
    assert not runner.is_alive(), "the run never ended"
    (error,) = done
    assert isinstance(error, TaskExecutionError)
    assert "StopIteration" in str(error)


def test_without_eventfd_the_inbox_wakes_its_loop_through_a_pipe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(os, "eventfd", raising=False)  # as on macOS
    loop = asyncio.new_event_loop()
    try:
        for word in "abc":
            assert loop.run_until_complete(_sync.in_worker_thread(str.upper, word)) == word.upper()
        inbox = inbox_of(loop)
        assert inbox is not None
        fds = (inbox._read_fd, inbox._write_fd)
        assert fds[0] != fds[1]
    finally:
        loop.close()
    del loop
    gc.collect()
    assert not any(is_open(fd) for fd in fds)


def test_a_sync_tool_raising_stop_iteration_fails_its_call_and_the_run_goes_on() -> None:
    from agentensemble import Agent, Ensemble, Task, tool
    from agentensemble.testing import ScriptedChatModel, tool_calls

    @tool(description="Takes the next item.")
    def take(value: str) -> str:
        return str(next(iter([])))

    model = ScriptedChatModel([tool_calls(("take", {"value": "x"})), "done"])
    agent = Agent(role="worker", goal="work", llm=model, tools=[take])
    task = Task(description="take one", expected_output="an item", agent=agent)
    done: list[Any] = []
    runner = threading.Thread(
        target=lambda: done.append(Ensemble(agents=[agent], tasks=[task]).run()), daemon=True
    )
    with pytest.warns(Warning, match="StopIteration"):
        runner.start()
        runner.join(LIMIT)
    assert not runner.is_alive(), "the run never ended"
    assert done[0].raw == "done"


def test_where_loops_watch_sockets_only_results_go_through_call_soon_threadsafe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_sync, "_CAN_WATCH", False)  # as on Windows
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(_sync.in_worker_thread(str.upper, "a")) == "A"
        assert inbox_of(loop) is None
    finally:
        loop.close()
