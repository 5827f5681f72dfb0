"""A durable app whose tool returns a value pickle refuses (a lock in its structured output):
``python _unpicklable_app.py DB_URL WORKDIR RUN_ID``; prints the output as JSON on its last line."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from agentensemble import Agent, Ensemble, Task, ToolResult, tool
from agentensemble.durable import DurableRuntime
from agentensemble.testing import ScriptedChatModel, tool_call

DB_URL, WORKDIR, RUN_ID = sys.argv[1], Path(sys.argv[2]), sys.argv[3]


@tool
def book() -> ToolResult:
    """Book the room (a side effect the test counts)."""
    with (WORKDIR / "effects.log").open("a") as file:
        file.write("booked\n")
    return ToolResult.success("booked", structured_output={"lock": threading.Lock(), "room": 7})


def build() -> Ensemble:
    model = ScriptedChatModel([tool_call("book"), "The room is booked"])
    agent = Agent(role="Clerk", goal="Book", tools=[book], llm=model)
    return Ensemble(tasks=[Task(description="Book a room", agent=agent)])


runtime = DurableRuntime(DB_URL)
runtime.register("booking", build)

if __name__ == "__main__":
    runtime.launch()
    output = runtime.run("booking", {}, run_id=RUN_ID)
    runtime.shutdown()
    record = output.task_outputs[0].tool_calls[0]
    print(json.dumps({"raw": output.raw, "structured": record.structured_output}))
