"""The worker app of ``benchmarks/durable.py``: one short scripted run (a tool call, an answer).

Workers: ``python -m agentensemble.durable worker _durable_app --worker-id w1`` run from this
directory with ``AGENTENSEMBLE_DATABASE_URL`` set. ``DURABLE_BENCH_SLOW`` (seconds) makes the
tool sleep, so a worker can be killed while it holds runs; each answer names the worker that
made it, so the benchmark can see how runs spread over workers.
"""

from __future__ import annotations

import os
import time

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableRuntime
from agentensemble.llm.types import ChatResponse, Message, ToolSpec
from agentensemble.testing import FunctionChatModel, tool_call

WORKER = os.environ.get("AGENTENSEMBLE_WORKER_ID", "?")


@tool
def stamp(item: str) -> str:
    """Stamp ``item`` (slowly when this worker is told to be slow)."""
    time.sleep(float(os.environ.get("DURABLE_BENCH_SLOW", "0")))
    return f"stamped {item}"


def clerk(messages: list[Message], tools: list[ToolSpec] | None) -> ChatResponse | str:
    """Calls stamp(item) once, then answers with the worker's id."""
    if any(message["role"] == "tool" for message in messages):
        return f"done by {WORKER}"
    return tool_call("stamp", {"item": "x"})


def build() -> Ensemble:
    agent = Agent(role="Clerk", goal="Stamp", tools=[stamp], llm=FunctionChatModel(clerk))
    return Ensemble(tasks=[Task(description="Stamp {item}", agent=agent)])


runtime = DurableRuntime(worker_concurrency=int(os.environ.get("DURABLE_BENCH_CONCURRENCY", "4")))
runtime.register("stamp", build)
