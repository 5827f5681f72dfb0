"""A durable app for the workflow crash tests: a hierarchical team with a scripted model.

Run as ``python _workflows_app.py DB_URL WORKDIR RUN_ID KILL_AT``: the process SIGKILLs itself
when its model call number KILL_AT (counted over every process, in WORKDIR/calls.log) begins
(0: never). Every model call and every tool body appends a line to WORKDIR, so the test counts
what ran. It prints the output as JSON on its last line.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from agentensemble import Agent, Ensemble, Task, Workflow, tool
from agentensemble.durable import DurableRuntime
from agentensemble.testing import FunctionChatModel, tool_call

DB_URL, WORKDIR, RUN_ID, KILL_AT = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
CALLS, EFFECTS = WORKDIR / "calls.log", WORKDIR / "effects.log"


def count_call(who: str) -> None:
    with CALLS.open("a") as file:
        file.write(who + "\n")
    if len(CALLS.read_text().split()) == KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)


@tool
def note(text: str) -> str:
    """Write a fact down (a side effect the test counts)."""
    with EFFECTS.open("a") as file:
        file.write(text + "\n")
    return f"noted {text}"


def manager(messages: list[dict[str, Any]], tools: Any) -> Any:
    count_call("manager")
    done = sum(1 for m in messages if m["role"] == "tool")
    if done == 0:
        return tool_call("delegate_task", {"agent_role": "Researcher", "instructions": "Facts"})
    if done == 1:
        return tool_call("delegate_task", {"agent_role": "Writer", "instructions": "Write it"})
    return "Final: tides follow the moon."


def researcher(messages: list[dict[str, Any]], tools: Any) -> Any:
    count_call("researcher")
    if not any(m["role"] == "tool" for m in messages):
        return tool_call("note", {"text": "moon"})
    return "moon, sun"


def writer(messages: list[dict[str, Any]], tools: Any) -> Any:
    count_call("writer")
    return "Tides follow the moon."


def build() -> Ensemble:
    return Ensemble(
        tasks=[Task(description="Write a short report on tides", expected_output="A report")],
        agents=[
            Agent(
                role="Researcher",
                goal="Find facts",
                tools=[note],
                llm=FunctionChatModel(researcher),
            ),
            Agent(role="Writer", goal="Write well", llm=FunctionChatModel(writer)),
        ],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=FunctionChatModel(manager),
    )


runtime = DurableRuntime(DB_URL)
runtime.register("team", build)

if __name__ == "__main__":
    runtime.launch()
    output = runtime.run("team", {}, run_id=RUN_ID)
    runtime.shutdown()
    print(
        json.dumps(
            {
                "raw": output.raw,
                "tasks": [[o.agent_role, o.raw] for o in output.task_outputs],
                "tool_calls": [
                    [c.name, c.arguments, c.output]
                    for o in output.task_outputs
                    for c in o.tool_calls
                ],
            }
        )
    )
