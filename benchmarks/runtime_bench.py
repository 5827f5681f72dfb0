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
    sync_s, async_s = [], []
    for _ in range(repeats):
        sync_s.append(_per_run(sync_batch, runs))
        async_s.append(_per_run(async_batch, runs))
    loop.close()
    ratios = [s / a for s, a in zip(sync_s, async_s, strict=True)]

    many = _one_tool_ensemble(1000)

    def many_batch(n: int) -> None:
        for _ in range(n):
            many.run()

    many_batch(1)
    many_s = [_per_run(many_batch, 5) for _ in range(repeats)]
    return [
        ("`Ensemble.run()`, 1-tool scripted run", spread(sync_s, digits=3), "goal <= 0.5 ms"),
        ("`await Ensemble.arun()`, same run", spread(async_s, digits=3), "floor for run()"),
        (
            "run() / arun()",
            f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})",
            "goal <= 1.05x; batches interleaved",
        ),
        ("`run()`, 1-call run with 1000 tools", spread(many_s), "goal <= 5 ms"),
    ]


def bench_fanout(repeats: int, ensembles: int = 50, latency: float = 0.1) -> list[Row]:
    """``ensembles`` one-call ensembles at once against a server with ``latency`` per answer,
    against the same number of raw ``litellm.acompletion`` calls at once: requests per second."""
    from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task
    from agentensemble.llm._litellm import load_litellm

    litellm = load_litellm()  # tamed as our LLM uses it: same transport for both lanes
    messages = [{"role": "user", "content": "Say hi"}]
    with server_process(latency) as (base_url, _):
        llm = LLM(
            model="openai/test-model",
            api_base=base_url,
            api_key="sk-test",
            retry_policy=RetryPolicy(max_attempts=1),
        )
        team = [
            Ensemble(
                tasks=[Task(description=f"Say hi {n}", agent=Agent(role="A", goal="G"))], llm=llm
            )
            for n in range(ensembles)
        ]

        async def ours() -> None:
            await asyncio.gather(*(e.arun() for e in team))

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

        loop = asyncio.new_event_loop()
        loop.run_until_complete(ours())  # warm-up: imports, connection pools
        loop.run_until_complete(raw())
        ours_s, raw_s = [], []
        for _ in range(repeats):
            for fn, samples in ((ours, ours_s), (raw, raw_s)):
                started = time.perf_counter()
                loop.run_until_complete(fn())
                samples.append(time.perf_counter() - started)
        loop.close()
    rate = [ensembles / s for s in ours_s]
    raw_rate = [ensembles / s for s in raw_s]
    ratios = [r / q for r, q in zip(rate, raw_rate, strict=True)]
    where = f"{ensembles} at once, {latency * 1e3:.0f} ms model latency, litellm lane"
    return [
        (
            f"ensembles per second ({where})",
            f"{statistics.median(rate):.0f}/s ({min(rate):.0f}-{max(rate):.0f})",
            "one model call each",
        ),
        (
            f"raw litellm.acompletion per second ({ensembles} at once)",
            f"{statistics.median(raw_rate):.0f}/s ({min(raw_rate):.0f}-{max(raw_rate):.0f})",
            f"ideal {ensembles / latency:.0f}/s",
        ),
        (
            "ensembles / raw litellm throughput",
            f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})",
            "goal >= 1.5x needs the fast lane",
        ),
    ]


SECTIONS: dict[str, Callable[[int], list[Row]]] = {
    "run": bench_run,
    "fanout": bench_fanout,
}

__all__ = ["SECTIONS", "server_process", "spread"]
