"""Cancelling a run: it stops at once, leaves no worker thread or socket behind, and no history
shows a tool call without its result.

What "at once" means is checked without a clock: the run's task has finished cancelling while
the slow tool or model answer it was waiting for is still blocked (a test-held event that is
only released afterwards). Python cannot stop a thread, so a sync tool's body that is already
running carries on in its worker thread until it returns; the framework runs such bodies in
daemon threads, so neither ``asyncio.run``'s shutdown nor the interpreter's exit waits for them.
The check is therefore: no new non-daemon thread at any time, and the tool's daemon worker free
again (back in the pool, or gone) once the test lets the body return.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentensemble import (
    LLM,
    Agent,
    AgentTool,
    Ensemble,
    RetryPolicy,
    Task,
    ToolResolver,
    ToolResult,
    tool,
)
from agentensemble._base.threads import daemon_pool
from agentensemble.execution.agent_executor import AgentExecutor, AgentTask
from agentensemble.llm.types import Message
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call, tool_calls

sys.path.insert(0, str(Path(__file__).parent / "e2e"))  # the local OpenAI-compatible server
from openai_server import OpenAIServer

LIMIT = 10.0  # seconds: the longest anything here may block; a bound, never an expectation


def non_daemon_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if not t.daemon}


def assert_no_dangling_tool_calls(messages: Sequence[Message]) -> None:
    """Every assistant tool-call message is followed by one tool message per call id."""
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        if message.get("role") != "assistant" or not calls:
            continue
        following = messages[index + 1 : index + 1 + len(calls)]
        assert [m.get("role") for m in following] == ["tool"] * len(calls), messages
        assert [m["tool_call_id"] for m in following] == [c["id"] for c in calls]


def wait_until(ready: Callable[[], bool]) -> None:
    """Wait (bounded) until ``ready()``, from sync code."""
    deadline = time.monotonic() + LIMIT
    while not ready():
        assert time.monotonic() < deadline, "still waiting after the limit"
        time.sleep(0.005)


async def until(ready: Callable[[], bool]) -> None:
    """Wait (bounded, without a worker thread) until ``ready()``."""
    deadline = time.monotonic() + LIMIT
    while not ready():
        assert time.monotonic() < deadline, "still waiting after the limit"
        await asyncio.sleep(0.005)


async def cancel_when(run: Coroutine[Any, Any, Any], started: Callable[[], bool]) -> None:
    """Start ``run``, cancel it once ``started()``, and wait until it has finished."""
    task = asyncio.ensure_future(run)
    await until(started)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, LIMIT)  # cancelled, not timed out


class Gate:
    """A blocking step the test controls: ``started`` once it runs, blocked until ``release``."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.thread: threading.Thread | None = None
        # a safety net: a test that forgets to release cannot hang the suite
        self._timer = threading.Timer(LIMIT, self.release.set)
        self._timer.daemon = True
        self._timer.start()

    def block(self) -> None:
        self.thread = threading.current_thread()
        self.started.set()
        self.release.wait(LIMIT)
        self.finished.set()

    def close(self) -> None:
        self.release.set()
        self._timer.cancel()
        if self.thread is not None:
            self.finished.wait(LIMIT)  # the worker thread itself stays in the pool


@pytest.fixture
def gate() -> Iterator[Gate]:
    gate = Gate()
    yield gate
    gate.close()


def slow_agent(model: Any, tools: list[Any]) -> Agent:
    return Agent(role="Worker", goal="Finish the job", tools=tools, llm=model)


# -- a sync tool in flight -------------------------------------------------------------------


def test_cancelling_during_a_sync_tool_stops_at_once_and_leaves_no_thread(gate: Gate) -> None:
    @tool
    def crunch(size: int) -> str:
        """Crunch numbers (slowly)."""
        gate.block()
        return "crunched"

    model = ScriptedChatModel([tool_call("crunch", {"size": 3}), "never reached"])
    ensemble = Ensemble(tasks=[Task(description="Crunch", agent=slow_agent(model, [crunch]))])
    before = non_daemon_threads()

    asyncio.run(cancel_when(ensemble.arun(), gate.started.is_set))

    # the run and its event loop are gone while the tool's body is still blocked
    assert not gate.release.is_set() and not gate.finished.is_set()
    assert gate.thread is not None and gate.thread.daemon
    assert non_daemon_threads() == before
    gate.close()
    worker = gate.thread
    wait_until(lambda: worker not in daemon_pool().busy_threads())  # free once its call returned
    assert len(model.requests) == 1  # the model was not asked again
    for request in model.requests:
        assert_no_dangling_tool_calls(request.messages)


def test_a_cancelled_turn_leaves_no_tool_call_without_its_results(gate: Gate) -> None:
    @tool
    def fetch(page: int) -> str:
        """Fetch a page; page 2 is slow."""
        if page == 2:
            gate.block()
        return f"page {page}"

    model = ScriptedChatModel(
        [
            tool_calls(("fetch", {"page": 0}), ("fetch", {"page": 1})),
            tool_calls(("fetch", {"page": 2}), ("fetch", {"page": 3})),
            "never reached",
        ]
    )
    executor = AgentExecutor(
        AgentTask(
            role="Worker",
            goal="Read",
            description="Read the pages",
            expected_output="A summary",
            model=model,
            tools=ToolResolver().resolve([fetch]),
        )
    )

    asyncio.run(cancel_when(executor.run(), gate.started.is_set))

    # turn one is in the history with both results; turn two, cut short, is not in it at all
    roles = [m["role"] for m in executor.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool"]
    assert [m["content"] for m in executor.messages[3:]] == ["page 0", "page 1"]
    assert_no_dangling_tool_calls(executor.messages)
    assert len(model.requests) == 2
    for request in model.requests:
        assert_no_dangling_tool_calls(request.messages)
    assert [r.name for r in executor.records] == ["fetch", "fetch"]  # only finished calls


# -- an async tool in flight -----------------------------------------------------------------


def test_cancelling_reaches_every_async_tool_call_in_the_turn() -> None:
    cancelled: list[str] = []
    started = asyncio.Event()

    class Poller(AgentTool):
        name = "poll"
        description = "Polls a job until it is done."

        async def aexecute(self, input: str) -> ToolResult:
            started.set()
            try:
                await asyncio.sleep(LIMIT)
            except asyncio.CancelledError:
                cancelled.append(input)
                raise
            return ToolResult.success("done")

    model = ScriptedChatModel(
        [tool_calls(("poll", {"input": "a"}), ("poll", {"input": "b"})), "never reached"]
    )
    ensemble = Ensemble(tasks=[Task(description="Poll", agent=slow_agent(model, [Poller()]))])
    before = set(threading.enumerate())

    asyncio.run(cancel_when(ensemble.arun(), started.is_set))

    assert sorted(cancelled) == ["a", "b"]  # both concurrent calls were cancelled
    assert set(threading.enumerate()) <= before  # no thread at all was started
    for request in model.requests:
        assert_no_dangling_tool_calls(request.messages)


# -- a slow model answer in flight -----------------------------------------------------------


def test_cancelling_during_a_slow_model_answer_cancels_the_model_call() -> None:
    cancelled = asyncio.Event()
    started = asyncio.Event()
    turns = 0

    async def think(messages: list[Message], tools: list[Any] | None) -> Any:
        nonlocal turns
        turns += 1
        if turns == 1:
            return tool_call("note", {"text": "first"})
        started.set()
        try:
            await asyncio.sleep(LIMIT)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never reached"

    @tool
    def note(text: str) -> str:
        """Take a note."""
        return f"noted {text}"

    model = FunctionChatModel(think)
    ensemble = Ensemble(tasks=[Task(description="Think", agent=slow_agent(model, [note]))])
    before = non_daemon_threads()

    asyncio.run(cancel_when(ensemble.arun(), started.is_set))

    assert cancelled.is_set()
    assert non_daemon_threads() == before
    assert len(model.requests) == 2
    for request in model.requests:
        assert_no_dangling_tool_calls(request.messages)
    assert model.requests[1].tool_results == ["noted first"]


def open_client_sockets(port: int) -> int:
    """This process's established TCP connections to ``port`` on 127.0.0.1 (Linux /proc)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state, inode = fields[2], fields[3], fields[9]
        if state == "01" and int(remote.split(":")[1], 16) == port and inode in inodes:
            count += 1
    return count


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="counts sockets through /proc")
def test_cancelling_during_a_slow_http_answer_closes_the_connection() -> None:
    with OpenAIServer() as server:
        server.push_fault(kind="hang", delay=LIMIT)
        llm = LLM(
            "openai/test-model",
            api_base=server.base_url,
            api_key="sk-test",
            timeout=LIMIT * 2,
            retry_policy=RetryPolicy(max_attempts=3, initial_backoff=0.001, jitter=0),
        )
        ensemble = Ensemble(tasks=[Task(description="Answer", agent=slow_agent(llm, []))])

        async def scenario() -> None:
            run = asyncio.ensure_future(ensemble.arun())
            await until(lambda: len(server.arrivals) == 1)
            assert open_client_sockets(server.port) == 1  # the request in flight
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(run, LIMIT)
            await until(lambda: open_client_sockets(server.port) == 0)

        before = non_daemon_threads()
        asyncio.run(scenario())

        assert len(server.arrivals) == 1  # a cancelled call is not retried
        assert open_client_sockets(server.port) == 0
        assert non_daemon_threads() == before


# -- Ctrl-C during run() ---------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import asyncio, signal, sys, threading, time
    from agentensemble import Agent, Ensemble, Task, tool

    # a shell running the tests in the background makes children ignore SIGINT: undo that
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call

    @tool
    def crunch(size: int) -> str:
        \"\"\"Crunch numbers (slowly).\"\"\"
        print("tool started", flush=True)
        time.sleep(30)
        print("tool finished", flush=True)
        return "crunched"

    def dangling_calls(messages):
        roles = [m["role"] for m in messages]
        calls = [i for i, m in enumerate(messages) if m.get("tool_calls")]
        return sum(1 for i in calls if roles[i + 1 : i + 2] != ["tool"])

    async def think(messages, tools):
        print("model started", flush=True)
        await asyncio.sleep(30)
        return "never reached"

    if sys.argv[1] == "tool":
        model = ScriptedChatModel([tool_call("crunch", {"size": 3}), "never reached"])
    else:
        model = FunctionChatModel(think)
    agent = Agent(role="Worker", goal="Finish", tools=[crunch], llm=model)
    ensemble = Ensemble(tasks=[Task(description="Crunch", agent=agent)])

    async def cell():  # as in Jupyter: run() called while this thread's event loop runs
        ensemble.run()

    try:
        if sys.argv[2] == "running-loop":
            asyncio.new_event_loop().run_until_complete(cell())
        elif sys.argv[2] == "asyncio-run":  # asyncio's own SIGINT handler is installed
            asyncio.run(cell())
        else:
            ensemble.run()
    except KeyboardInterrupt:
        main = threading.main_thread()
        others = [t.name for t in threading.enumerate() if not t.daemon and t is not main]
        dangling = sum(dangling_calls(r.messages) for r in model.requests)
        print(f"interrupted; non-daemon threads: {others}; dangling calls: {dangling}")
        sys.exit(130)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT")
@pytest.mark.parametrize("caller", ["script", "running-loop", "asyncio-run"])
@pytest.mark.parametrize("slow", ["tool", "model"])
def test_ctrl_c_during_run_stops_without_waiting_for_the_slow_step(
    slow: str, caller: str, tmp_path: Path
) -> None:
    # "running-loop": run() called inside a running event loop, as in Jupyter
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), slow, caller],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).parent.parent,
    )
    killer = threading.Timer(LIMIT * 3, child.kill)  # a bound, should the child never stop
    killer.start()
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        assert first.strip() == f"{slow} started", first
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=LIMIT * 2)
    finally:
        killer.cancel()
        child.kill()

    assert child.returncode == 130, output
    assert "interrupted; non-daemon threads: []; dangling calls: 0" in output
    assert "tool finished" not in output  # it exited while the tool was still sleeping
