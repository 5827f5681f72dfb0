"""Runtime benchmarks (issue 14): cost of a ``run()``, ``run()`` against ``arun()``, a run with
1000 tools, and 50 concurrent ensembles over HTTP against raw litellm.

Every figure is a median with its min-max over repeated samples taken in one process run; pairs
that are compared are sampled alternately (interleaved), so load drift on a shared machine hits
both alike. The HTTP server runs in a separate process so it does not compete with the client
for this interpreter's GIL.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
Row = tuple[str, str, str]

SERVER_SCRIPT = """
import sys, time
from agentensemble.testing.openai_server import OpenAICompatibleServer, TextReply
latency = float(sys.argv[1])
with OpenAICompatibleServer() as server:
    server.set_responder(lambda body: TextReply("hi", delay=latency))
    print(server.base_url, flush=True)
    sys.stdin.read()  # serve until the parent closes our stdin
    print(server.connections_opened, flush=True)
"""


@contextmanager
def server_process(latency: float) -> Iterator[tuple[str, list[int]]]:
    """A local OpenAI-compatible server in its own process: (base_url, [connections opened])."""
    child = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT, str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdin is not None and child.stdout is not None
    connections: list[int] = []
    try:
        yield child.stdout.readline().strip(), connections
    finally:
        child.stdin.close()
        tail = child.stdout.read().split()
        connections.extend(int(n) for n in tail[-1:])
        child.wait(timeout=30)


def spread(samples: Sequence[float], scale: float = 1e3, unit: str = "ms", digits: int = 2) -> str:
    """``median (min-max)`` of ``samples`` (seconds), scaled to ``unit``."""
    values = [s * scale for s in samples]
    return (
        f"{statistics.median(values):.{digits}f} {unit} "
        f"({min(values):.{digits}f}-{max(values):.{digits}f})"
    )


def _one_tool_ensemble(tool_count: int = 1) -> Any:
    """An ensemble whose stateless model calls tool ``t0`` once, then answers."""
    from agentensemble import Agent, Ensemble, Task, tool
    from agentensemble.llm.types import ChatResponse, ToolCall

    class OneCallModel:
        model = "bench"

        async def complete(self, messages: Sequence[Any], **_: Any) -> ChatResponse:
            if messages[-1]["role"] == "tool":
                return ChatResponse(content="done", finish_reason="stop")
            call = ToolCall(id="call_1", name="t0", arguments='{"value": "x"}')
            return ChatResponse(tool_calls=[call], finish_reason="tool_calls")

    def make(n: int) -> Any:
        @tool(name=f"t{n}", description=f"Echo a value (tool {n}).")
        def echo(value: str) -> str:
            return value

        return echo

    agent = Agent(
        role="Bench", goal="g", tools=[make(n) for n in range(tool_count)], llm=OneCallModel()
    )
    return Ensemble(tasks=[Task(description="d", agent=agent)])


def _per_run(batch: Callable[[int], None], runs: int) -> float:
    started = time.perf_counter()
    batch(runs)
    return (time.perf_counter() - started) / runs


def _cpu_per_run(batch: Callable[[int], None], runs: int) -> float:
    """CPU seconds of this whole process (every thread) per run: what other processes taking
    the cores cannot inflate, unlike wall time."""
    started = time.process_time()
    batch(runs)
    return (time.process_time() - started) / runs


def bench_run(repeats: int, runs: int = 200) -> list[Row]:
    """``run()`` and ``arun()`` of a 1-tool scripted run, interleaved batches; 1000 tools."""
    ensemble = _one_tool_ensemble()
    loop = asyncio.new_event_loop()  # the arun floor: one loop, as a user's async app has

    def sync_batch(n: int) -> None:
        for _ in range(n):
            ensemble.run()

    def async_batch(n: int) -> None:
        async def go() -> None:
            for _ in range(n):
                await ensemble.arun()

        loop.run_until_complete(go())

    sync_batch(20)
    async_batch(20)  # warm-up: validators built, threads and loops started
    sync_s, async_s, sync_cpu, async_cpu = [], [], [], []
    for _ in range(repeats * 4):  # short batches, alternating: load drift hits both alike
        for batch, wall, cpu in ((sync_batch, sync_s, sync_cpu), (async_batch, async_s, async_cpu)):
            started, cpu_started = time.perf_counter(), time.process_time()
            batch(runs // 4)
            wall.append((time.perf_counter() - started) / (runs // 4))
            cpu.append((time.process_time() - cpu_started) / (runs // 4))
    loop.close()
    ratios = [s / a for s, a in zip(sync_s, async_s, strict=True)]
    cpu_ratios = [s / a for s, a in zip(sync_cpu, async_cpu, strict=True)]

    many = _one_tool_ensemble(1000)

    def many_batch(n: int) -> None:
        for _ in range(n):
            many.run()

    many_batch(1)
    many_s = [_per_run(many_batch, 5) for _ in range(repeats)]
    many_cpu = [_cpu_per_run(many_batch, 5) for _ in range(repeats)]

    def times(values: list[float]) -> str:
        return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"

    return [
        ("`Ensemble.run()`, 1-tool scripted run, wall", spread(sync_s, digits=3), "goal <= 0.5 ms"),
        ("`Ensemble.run()`, same, CPU of the process", spread(sync_cpu, digits=3), ""),
        ("`await Ensemble.arun()`, same run, wall", spread(async_s, digits=3), "floor for run()"),
        ("`await Ensemble.arun()`, same, CPU of the process", spread(async_cpu, digits=3), ""),
        ("run() / arun(), wall", times(ratios), "goal <= 1.05x; batches interleaved"),
        ("run() / arun(), CPU", times(cpu_ratios), "steadier under load"),
        ("`run()`, 1-call run with 1000 tools, wall", spread(many_s), "goal <= LangGraph's"),
        ("`run()`, 1-call run with 1000 tools, CPU", spread(many_cpu), ""),
    ]


def bench_fanout(repeats: int, ensembles: int = 50, latency: float = 0.1) -> list[Row]:
    """``ensembles`` one-call ensembles at once against a server with ``latency`` per answer, on
    each model lane, against the same number of raw ``litellm.acompletion`` calls at once:
    completed requests per second, rounds of the three variants alternating."""
    from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task
    from agentensemble.llm._litellm import load_litellm

    litellm = load_litellm()  # tamed as our LLM uses it: same transport as our litellm lane
    messages = [{"role": "user", "content": "Say hi"}]
    with server_process(latency) as (base_url, _):

        def team(lane: str) -> list[Any]:
            llm = LLM(
                model="openai/test-model",
                api_base=base_url,
                api_key="sk-test",
                retry_policy=RetryPolicy(max_attempts=1),
                lane=lane,
            )
            agent = Agent(role="A", goal="G", llm=llm)
            return [
                Ensemble(tasks=[Task(description=f"Say hi {n}", agent=agent)])
                for n in range(ensembles)
            ]

        teams = {"openai": team("auto"), "litellm": team("litellm")}

        async def ours(lane: str) -> None:
            await asyncio.gather(*(e.arun() for e in teams[lane]))

        async def raw() -> None:
            await asyncio.gather(
                *(
                    litellm.acompletion(
                        model="openai/test-model",
                        messages=messages,
                        api_base=base_url,
                        api_key="sk-test",
                        max_retries=0,
                        timeout=60.0,
                    )
                    for _ in range(ensembles)
                )
            )

        variants: dict[str, Callable[[], Any]] = {
            "openai": lambda: ours("openai"),
            "litellm": lambda: ours("litellm"),
            "raw": raw,
        }
        loop = asyncio.new_event_loop()
        for make in variants.values():  # warm-up: imports, connection pools
            loop.run_until_complete(make())
        rates: dict[str, list[float]] = {name: [] for name in variants}
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(repeats):
            for name, make in variants.items():
                started, cpu_started = time.perf_counter(), time.process_time()
                loop.run_until_complete(make())
                rates[name].append(ensembles / (time.perf_counter() - started))
                cpu[name].append((time.process_time() - cpu_started) / ensembles)
        loop.close()

    def per_second(values: list[float]) -> str:
        return f"{statistics.median(values):.0f}/s ({min(values):.0f}-{max(values):.0f})"

    def ratio(name: str) -> str:
        values = [a / b for a, b in zip(rates[name], rates["raw"], strict=True)]
        return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"

    at_once = f"{ensembles} at once, {latency * 1e3:.0f} ms model latency"
    return [
        (f"ensembles per second, openai lane ({at_once})", per_second(rates["openai"]), ""),
        (f"ensembles per second, litellm lane ({at_once})", per_second(rates["litellm"]), ""),
        (
            f"raw litellm.acompletion per second ({at_once})",
            per_second(rates["raw"]),
            f"ideal {ensembles / latency:.0f}/s",
        ),
        ("ensembles on the openai lane / raw litellm", ratio("openai"), "goal >= 1.5x"),
        ("ensembles on the litellm lane / raw litellm", ratio("litellm"), "about 1x"),
        ("client CPU per ensemble, openai lane", spread(cpu["openai"]), "caps throughput"),
        ("client CPU per ensemble, litellm lane", spread(cpu["litellm"]), ""),
        ("client CPU per raw litellm.acompletion", spread(cpu["raw"]), ""),
    ]


def context_chain(tasks: int = 400, words: int = 20, capture: str = "standard") -> list[float]:
    """Seconds each task of one sequential run took, where task ``n`` has every earlier task as
    context (its prompt holds ``n`` outputs of ``words`` words): task ``n``'s cost is the time
    from the previous task's end to its own."""
    from agentensemble import Agent, Ensemble, Task
    from agentensemble.events import TaskCompleted
    from agentensemble.llm.types import ChatResponse

    class Answering:
        model = "bench"

        async def complete(self, messages: Sequence[Any], **_: Any) -> ChatResponse:
            return ChatResponse(content="answer " * words, finish_reason="stop")

    agent = Agent(role="Writer", goal="g", llm=Answering())
    chain: list[Any] = []
    for n in range(tasks):
        chain.append(Task(description=f"step {n}", agent=agent, context=list(chain)))
    ends: list[float] = []

    class Ends:
        def on_event(self, event: Any) -> None:
            if isinstance(event, TaskCompleted):
                ends.append(time.perf_counter())

    ensemble = Ensemble(tasks=chain, listeners=[Ends()], capture=capture)  # type: ignore[arg-type]
    started = time.perf_counter()
    ensemble.run()
    return [b - a for a, b in zip([started, *ends], ends, strict=False)]


def bench_context(repeats: int, tasks: int = 400) -> list[Row]:
    """A sequential run of ``tasks`` tasks, each with every earlier task as context: the cost
    per task of the first 50 against the last 50, with the trace captured (the default) and
    off, runs alternating."""
    first: dict[str, list[float]] = {"standard": [], "off": []}
    last: dict[str, list[float]] = {"standard": [], "off": []}
    whole: dict[str, list[float]] = {"standard": [], "off": []}
    for _ in range(max(3, repeats // 3)):
        for capture in ("standard", "off"):
            per_task = context_chain(tasks, capture=capture)
            first[capture].append(statistics.median(per_task[:50]))
            last[capture].append(statistics.median(per_task[-50:]))
            whole[capture].append(sum(per_task))
    rows: list[Row] = []
    for capture in ("standard", "off"):
        ratios = [b / a for a, b in zip(first[capture], last[capture], strict=True)]
        rows += [
            (
                f"{tasks} tasks, each with all earlier as context, capture={capture!r}: "
                "first 50 / last 50 per task",
                f"{spread(first[capture], digits=3)} / {spread(last[capture], digits=3)}",
                f"last / first {statistics.median(ratios):.1f}x "
                f"({min(ratios):.1f}-{max(ratios):.1f}); goal flat",
            ),
            (
                f"{tasks} tasks, capture={capture!r}: whole run",
                spread(whole[capture], scale=1.0, unit="s", digits=2),
                "",
            ),
        ]
    return rows


SECTIONS: dict[str, Callable[[int], list[Row]]] = {
    "run": bench_run,
    "context": bench_context,
    "fanout": bench_fanout,
}

__all__ = ["SECTIONS", "server_process", "spread"]
