"""The worker app of ``benchmarks/durable.py``: a short run of two tasks, the model answering
after ``DURABLE_BENCH_MODEL_MS`` (default 50 ms) as a real one would (awaiting, not computing).

Task 1 calls the stamp tool, then answers; task 2 answers: three model turns and a tool call.
Workers: ``agentensemble durable worker _durable_app --worker-id w1`` run from this
directory with ``AGENTENSEMBLE_DATABASE_URL`` set. ``DURABLE_BENCH_SLOW`` (seconds) makes the
tool sleep, so a worker can be killed while it holds runs; each answer names the worker that
made it, so the benchmark can see how runs spread over workers. ``DURABLE_BENCH_CONCURRENCY``
is the worker's ``worker_concurrency`` (default 4).
"""

from __future__ import annotations

import asyncio
import os
import time

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableRuntime
from agentensemble.llm.types import ChatResponse, Message, ToolSpec
from agentensemble.testing import FunctionChatModel, tool_call

WORKER = os.environ.get("AGENTENSEMBLE_WORKER_ID", "?")
MODEL_SECONDS = float(os.environ.get("DURABLE_BENCH_MODEL_MS", "50")) / 1000


@tool
def stamp(item: str) -> str:
    """Stamp ``item`` (slowly when this worker is told to be slow)."""
    time.sleep(float(os.environ.get("DURABLE_BENCH_SLOW", "0")))
    return f"stamped {item}"


async def clerk(messages: list[Message], tools: list[ToolSpec] | None) -> ChatResponse | str:
    """Task 1: calls stamp(item) once, then answers; task 2: answers (with the worker's id)."""
    await asyncio.sleep(MODEL_SECONDS)
    if any("Sign" in str(message.get("content")) for message in messages):
        return f"done by {WORKER}"
    if any(message["role"] == "tool" for message in messages):
        return "stamped"
    return tool_call("stamp", {"item": "x"})


def build() -> Ensemble:
    agent = Agent(role="Clerk", goal="Stamp", tools=[stamp], llm=FunctionChatModel(clerk))
    return Ensemble(
        tasks=[
            Task(description="Stamp {item}", agent=agent),
            Task(description="Sign what was stamped", agent=agent),
        ]
    )


runtime = DurableRuntime(
    worker_concurrency=int(os.environ.get("DURABLE_BENCH_CONCURRENCY", "4")),
    poll_interval=float(os.environ.get("DURABLE_BENCH_POLL", "0.2")),
)
runtime.register("stamp", build)
