"""A durable app for the crash tests: two tasks, tools with side effects, a model over HTTP.

Run as ``python _notes_app.py DB_URL BASE_URL WORKDIR RUN_ID``: it writes its pid to
WORKDIR/pid, runs (or resumes) RUN_ID and prints the output as JSON on its last line.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from agentensemble import LLM, Agent, Ensemble, Task, Workflow, tool
from agentensemble.durable import DurableRuntime

DB_URL, BASE_URL, WORKDIR, RUN_ID = sys.argv[1:5]
EFFECTS = Path(WORKDIR) / "effects.log"


@tool
def note(text: str) -> str:
    """Write a note down (a side effect the test counts)."""
    with EFFECTS.open("a") as file:
        file.write(text + "\n")
    return f"noted {text}"


def build() -> Ensemble:
    model = LLM("openai/test-model", api_base=BASE_URL, api_key="sk-test-durable-0000")
    role = os.environ.get("WRITER_ROLE", "Writer")  # another role: a code change since the crash
    writer = Agent(role=role, goal="Take notes", tools=[note], llm=model)
    first = Task(description="Task one: note a and b", agent=writer, name="one")
    second = Task(description="Task two: note c", agent=writer, context=[first], name="two")
    if os.environ.get("NOTES_WORKFLOW") == "parallel":  # two independent branches at once
        second = Task(description="Task two: note c", agent=writer, name="two")
        return Ensemble(tasks=[first, second], workflow=Workflow.PARALLEL)
    return Ensemble(tasks=[first, second])


runtime = DurableRuntime(DB_URL)
runtime.register("notes", build)

if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    (Path(WORKDIR) / "pid").write_text(str(os.getpid()))
    runtime.launch()
    if os.environ.get("NOTES_STREAM"):  # watch the run's events as they happen
        import asyncio

        from agentensemble import EnsembleCompleted, TokenDelta

        async def watch() -> Any:
            kinds = []
            async for event in runtime.astream("notes", {}, run_id=RUN_ID):
                kinds.append(type(event).__name__)
                if isinstance(event, TokenDelta):
                    print("delta", json.dumps(event.text), flush=True)
                if isinstance(event, EnsembleCompleted):
                    print("events", json.dumps(kinds), flush=True)
                    return event.output
            raise AssertionError("the stream ended without EnsembleCompleted")

        output = asyncio.run(watch())
    else:
        output = runtime.run("notes", {}, run_id=RUN_ID)
    runtime.shutdown()
    print(
        json.dumps(
            {
                "raw": output.raw,
                "tasks": [o.raw for o in output.task_outputs],
                "tool_calls": [
                    [c.name, c.arguments, c.output]
                    for o in output.task_outputs
                    for c in o.tool_calls
                ],
                "llm_calls": [o.llm_calls for o in output.task_outputs],
            }
        )
    )
