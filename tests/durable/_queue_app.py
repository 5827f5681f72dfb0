"""A durable app for the worker tests: each run calls one tool that records which worker ran it.

Workers: ``python -m agentensemble durable worker _queue_app --worker-id w1`` with
``AGENTENSEMBLE_DATABASE_URL`` and ``QUEUE_APP_LOG`` (the file the tool appends to) set;
``QUEUE_APP_MODEL_LOG``, if set, gets a line per model request (``turn item worker``);
``QUEUE_APP_POLL`` sets the worker's ``poll_interval`` (seconds); ``QUEUE_APP_GATE``, if set,
holds a slow item's tool call until that file exists (it first creates ``<gate>.entered``), so a
test acts while the tool call is known to be under way, whatever the machine's load.
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
def record(item: str) -> str:
    """Record that this worker handled ``item``; slow items take a while (a long run)."""
    if item.startswith("slow"):
        gate = os.environ.get("QUEUE_APP_GATE")
        if gate:
            _wait_at(gate)
        time.sleep(float(os.environ.get("QUEUE_APP_SLOW", "0")))
    with open(os.environ["QUEUE_APP_LOG"], "a") as log:
        log.write(f"{item} {WORKER}\n")
    return f"recorded {item} by {WORKER}"


def _wait_at(gate: str, limit: float = 600) -> None:
    """Say the tool call is under way (``<gate>.entered``), then wait until ``gate`` exists."""
    with open(f"{gate}.entered", "a") as entered:
        entered.write(f"{WORKER}\n")
    deadline = time.monotonic() + limit
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)


def clerk(messages: list[Message], tools: list[ToolSpec] | None) -> ChatResponse | str:
    """Calls record(item) once, then answers: the item is the last word of the task."""
    item = str(messages[1]["content"]).split("Record ", 1)[1].split()[0]
    answered = any(message["role"] == "tool" for message in messages)
    if "QUEUE_APP_MODEL_LOG" in os.environ:
        with open(os.environ["QUEUE_APP_MODEL_LOG"], "a") as log:
            log.write(f"{'answer' if answered else 'call'} {item} {WORKER}\n")
    return "done" if answered else tool_call("record", {"item": item})


def build() -> Ensemble:
    model = FunctionChatModel(clerk)
    agent = Agent(role="Clerk", goal="Record the item", tools=[record], llm=model)
    return Ensemble(tasks=[Task(description="Record {item}", agent=agent)])


runtime = DurableRuntime(
    worker_concurrency=int(os.environ.get("QUEUE_APP_CONCURRENCY", "4")),
    poll_interval=float(os.environ.get("QUEUE_APP_POLL", "0.2")),
)
runtime.register("record", build)
