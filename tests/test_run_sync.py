"""``Ensemble.run()``: the sync facade on a long-lived event loop.

Every ``run()`` of a thread goes on that thread's own loop (so HTTP clients and their connections
are reused, see tests/e2e/test_connection_reuse.py); inside a running loop, on one shared
background loop. From any thread, nested, across forks, with the caller's context variables, and
failing with a traceback that starts at the caller. Ctrl-C is covered in tests/test_cancellation.py.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import signal
import subprocess
import sys
import threading
import traceback
import warnings
from pathlib import Path

import pytest

from agentensemble import Agent, Ensemble, Task, TaskExecutionError, TaskHandlerContext, tool
from agentensemble.testing import ScriptedChatModel, tool_call

LIMIT = 10.0  # seconds: a bound on any wait here, never an expectation


def loop_of_run() -> asyncio.AbstractEventLoop:
    """The event loop a run executes on (a deterministic task reports it)."""
    seen: list[asyncio.AbstractEventLoop] = []

    async def report(ctx: TaskHandlerContext) -> str:
        seen.append(asyncio.get_running_loop())
        return "ok"

    Ensemble(tasks=[Task(description="Report the loop", handler=report)]).run()
    return seen[0]


def test_consecutive_runs_share_one_long_lived_loop() -> None:
    first, second = loop_of_run(), loop_of_run()
    assert first is second
    assert not first.is_closed()


def test_each_thread_runs_on_a_loop_of_its_own_closed_when_the_thread_ends() -> None:
    loops: list[asyncio.AbstractEventLoop] = []
    thread = threading.Thread(target=lambda: loops.extend([loop_of_run(), loop_of_run()]))
    thread.start()
    thread.join(LIMIT)
    assert loops[0] is loops[1]
    assert loops[0] is not loop_of_run()
    del thread
    gc.collect()
    assert loops[0].is_closed()


def test_runs_from_several_threads_go_on_concurrently() -> None:
    # each run's handler waits for the other two: the runs must be in flight together
    barrier = threading.Barrier(3, timeout=LIMIT)
    results: list[str] = []

    def meet(ctx: TaskHandlerContext) -> str:
        barrier.wait()
        return ctx.inputs["who"]

    ensemble = Ensemble(tasks=[Task(description="Meet", handler=meet)])

    def run(who: str) -> None:
        results.append(ensemble.run({"who": who}).raw)

    threads = [threading.Thread(target=run, args=(who,)) for who in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(LIMIT)
    assert sorted(results) == ["a", "b", "c"]


@pytest.mark.anyio
async def test_run_inside_a_running_loop_uses_the_shared_loop_not_the_callers() -> None:
    model = ScriptedChatModel(["answer"])
    ensemble = Ensemble(
        tasks=[
            Task(description="Answer", agent=Agent(role="A", goal="G")),
        ],
        llm=model,
    )
    assert ensemble.run().raw == "answer"  # as in Jupyter: the caller's loop is running
    assert loop_of_run() is not asyncio.get_running_loop()


@pytest.mark.anyio
async def test_a_warning_of_a_run_on_the_shared_loop_points_at_the_line_that_called_run() -> None:
    from agentensemble import MissingContextWarning

    ensemble = Ensemble(
        tasks=[Task(description="Draft", name="draft"), Task(description="Use the previous task")],
        llm=ScriptedChatModel(["a", "b"]),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ensemble.run()  # on the shared loop's thread: no frame of this file on its stack
    found = [w for w in caught if issubclass(w.category, MissingContextWarning)]
    assert found and Path(found[0].filename) == Path(__file__)


def test_context_variables_of_the_caller_reach_the_run() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")
    request_id.set("r-7")

    @tool
    def whoami() -> str:
        """Tell the request id."""
        return request_id.get("unset")

    model = ScriptedChatModel([tool_call("whoami", {}), "done"])
    agent = Agent(role="A", goal="G", tools=[whoami], llm=model)
    Ensemble(tasks=[Task(description="Ask", agent=agent)]).run()
    assert model.requests[1].tool_results == ["r-7"]


def test_a_nested_run_from_an_async_tool_does_not_deadlock() -> None:
    inner = Ensemble(tasks=[Task(description="Inner", handler=lambda ctx: "inner answer")])

    @tool
    async def delegate() -> str:
        """Run the inner ensemble (sync, from a coroutine on the shared loop)."""
        return inner.run().raw

    model = ScriptedChatModel([tool_call("delegate", {}), "done"])
    agent = Agent(role="A", goal="G", tools=[delegate], llm=model)
    Ensemble(tasks=[Task(description="Delegate", agent=agent)]).run()
    assert model.requests[1].tool_results == ["inner answer"]


def test_a_nested_run_from_a_sync_tool_runs_on_its_worker_threads_loop() -> None:
    inner_loops: list[asyncio.AbstractEventLoop] = []

    async def inner_handler(ctx: TaskHandlerContext) -> str:
        inner_loops.append(asyncio.get_running_loop())
        return "inner answer"

    inner = Ensemble(tasks=[Task(description="Inner", handler=inner_handler)])

    @tool
    def delegate() -> str:
        """Run the inner ensemble from a worker thread."""
        return inner.run().raw

    model = ScriptedChatModel([tool_call("delegate", {}), "done"])
    agent = Agent(role="A", goal="G", tools=[delegate], llm=model)
    Ensemble(tasks=[Task(description="Delegate", agent=agent)]).run()
    assert model.requests[1].tool_results == ["inner answer"]
    assert len(inner_loops) == 1 and inner_loops[0] is not loop_of_run()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_on_a_fresh_loop_of_its_own() -> None:
    parent_loop = loop_of_run()  # the parent's loop thread exists; the child has none
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        code = 1
        try:
            child_loop = loop_of_run()
            code = 0 if child_loop is not parent_loop and not child_loop.is_closed() else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# -- tracebacks ------------------------------------------------------------------------------


def failing_run() -> None:
    def explode(ctx: TaskHandlerContext) -> str:
        raise ValueError("the handler broke")

    Ensemble(tasks=[Task(description="Explode", handler=explode)]).run()


def test_a_failing_runs_traceback_starts_at_the_call_without_loop_internals() -> None:
    with pytest.raises(TaskExecutionError) as info:
        failing_run()
    text = "".join(traceback.format_exception(info.value))

    assert "no running event loop" not in text  # no internal probe chained in
    assert "During handling of the above exception" not in text
    for internals in ("asyncio", "concurrent" + os.sep + "futures"):
        assert os.sep + internals + os.sep not in text, text
    # the error's own traceback: this file's call, then the facade, then the run itself
    frames = traceback.extract_tb(info.value.__traceback__)
    assert [f.name for f in frames[:2]] == [
        "test_a_failing_runs_traceback_starts_at_the_call_without_loop_internals",
        "failing_run",
    ]
    assert frames[2].name == "run" and Path(frames[2].filename).name == "ensemble.py"
    # nothing is lost: the cause and the line that raised it are still there
    assert isinstance(info.value.__cause__, ValueError)
    assert 'raise ValueError("the handler broke")' in text


def test_a_run_ending_in_system_exit_leaves_the_loop_serving() -> None:
    # SystemExit escaping a task would stop an event loop; the long-lived one must survive it
    def leave(ctx: TaskHandlerContext) -> str:
        raise SystemExit("argparse gave up")

    loop = loop_of_run()
    with pytest.raises((SystemExit, TaskExecutionError)):
        Ensemble(tasks=[Task(description="Leave", handler=leave)]).run()
    assert loop_of_run() is loop


# -- Ctrl-C on the calling thread's loop -----------------------------------------------------

OWN_HANDLER_CHILD = """
import asyncio, signal, sys
from agentensemble import Ensemble, Task, TaskHandlerContext

def own_handler(signum, frame):  # a handler of the user's own, raising as Python's does
    raise KeyboardInterrupt

signal.signal(signal.SIGINT, own_handler)

def first(ctx: TaskHandlerContext) -> str:
    return "first done"

async def slow(ctx: TaskHandlerContext) -> str:
    try:
        print("slow started", flush=True)
        await asyncio.sleep(30)
        return "never"
    finally:
        print("slow unwound", flush=True)

ensemble = Ensemble(tasks=[Task(description="First", handler=first),
                           Task(description="Slow", handler=slow)])
try:
    ensemble.run()
except KeyboardInterrupt as stop:
    kept = [o.raw for o in getattr(stop, "completed_outputs", [])]
    print(f"interrupted; kept: {kept}", flush=True)
    sys.exit(130)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name == "nt", reason="sends SIGINT")
def test_ctrl_c_under_a_handler_of_the_users_own_still_unwinds_the_run(tmp_path: Path) -> None:
    # run() leaves a SIGINT handler it did not install alone; the KeyboardInterrupt that handler
    # raises must still cancel the run, let it unwind, and keep what it had finished
    script = tmp_path / "child.py"
    script.write_text(OWN_HANDLER_CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).parent.parent,
    )
    killer = threading.Timer(LIMIT * 3, child.kill)  # a bound, should the child never stop
    killer.start()
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "slow started"
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=LIMIT * 2)
    finally:
        killer.cancel()
        child.kill()
    assert child.returncode == 130, output
    assert "slow unwound" in output
    assert "interrupted; kept: ['first done']" in output


# -- the thread's loop runs until the run's own task stops it ------------------------------------


def in_a_thread(body: object) -> list[object]:
    """``body()`` in a fresh thread (its own loop), bounded: what it returned or raised."""
    found: list[object] = []

    def target() -> None:
        try:
            found.append(body())  # type: ignore[operator]
        except BaseException as error:  # handed to the test
            found.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(LIMIT)
    assert not thread.is_alive(), "the run never ended"
    return found


def test_ctrl_c_before_the_runs_first_step_still_ends_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the task is cancelled before it ever ran, so it cannot stop the loop itself
    from agentensemble._base import background_loop as _background_loop

    monkeypatch.setattr(_background_loop, "_take_sigint", lambda on_sigint: on_sigint(2, None))
    started: list[bool] = []

    async def body() -> int:
        started.append(True)
        return 1

    never_started = body()
    found = in_a_thread(lambda: _background_loop.run_sync(never_started))
    assert isinstance(found[0], KeyboardInterrupt)
    assert started == []
    never_started.close()  # as Python would warn: it was never awaited


def test_a_stop_left_over_from_an_earlier_run_leaves_a_later_run_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ctrl-C in the loop pass where a run ends leaves its handling queued on the loop; it runs
    # at the start of the next run and must not stop that one
    from agentensemble._base import background_loop as _background_loop

    handlers: list[object] = []
    monkeypatch.setattr(_background_loop, "_take_sigint", handlers.append)

    async def interrupted_as_it_ends() -> int:
        handlers[-1](2, None)  # type: ignore[operator]
        return 1

    async def several_passes() -> int:
        for _ in range(5):
            await asyncio.sleep(0)
        return 42

    def two_runs() -> object:
        with pytest.raises(KeyboardInterrupt):
            _background_loop.run_sync(interrupted_as_it_ends())
        return _background_loop.run_sync(several_passes())

    assert in_a_thread(two_runs) == [42]


def test_a_run_that_stops_its_loop_is_cancelled_and_raises_as_run_until_complete_did() -> None:
    from agentensemble._base.background_loop import run_sync

    unwound: list[bool] = []

    async def stops_the_loop() -> int:
        asyncio.get_running_loop().stop()
        try:
            await asyncio.sleep(LIMIT)
        finally:
            unwound.append(True)
        return 1

    found = in_a_thread(lambda: run_sync(stops_the_loop()))
    assert isinstance(found[0], RuntimeError)
    assert "stopped before" in str(found[0])
    assert unwound == [True]
    assert in_a_thread(lambda: run_sync(asyncio.sleep(0, result=7))) == [7]
