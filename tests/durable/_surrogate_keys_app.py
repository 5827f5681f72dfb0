"""A durable app whose tool result and parsed output hold a lone surrogate in a dict key:
``python _surrogate_keys_app.py DB_URL WORKDIR RUN_ID``; prints the output's JSON on its last
line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableRuntime
from agentensemble.testing import ScriptedChatModel, tool_call

DB_URL, WORKDIR, RUN_ID = sys.argv[1], Path(sys.argv[2]), sys.argv[3]


@tool
def list_files() -> dict[str, Any]:
    """List the folder (a side effect the test counts)."""
    with (WORKDIR / "effects.log").open("a") as file:
        file.write("listed\n")
    return {"caf\udce9.txt": 3}


def build() -> Ensemble:
    model = ScriptedChatModel([tool_call("list_files"), '{"caf\\udce9.txt": 3}'])
    agent = Agent(role="Clerk", goal="List", tools=[list_files], llm=model)
    task = Task(description="List the folder", agent=agent, output_type=dict[str, int])
    return Ensemble(tasks=[task])


runtime = DurableRuntime(DB_URL)
runtime.register("listing", build)

if __name__ == "__main__":
    runtime.launch()
    output = runtime.run("listing", {}, run_id=RUN_ID)
    runtime.shutdown()
    print(output.model_dump_json())
