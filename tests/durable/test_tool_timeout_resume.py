"""A tool that timed out in a durable run: its failure is the call's checkpointed outcome, so a
resumed (forked) run replays it as it was and never runs the body again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentensemble.testing import OpenAICompatibleServer, TextReply, ToolCallsReply

APP = """
import asyncio, json, sys
from agentensemble import LLM, Agent, Ensemble, Task, tool
from agentensemble.durable import DurableClient, DurableRuntime

db, base = sys.argv[1:3]
RUNS = []

@tool(timeout=0.2)
async def lookup(order: str) -> str:
    \"\"\"Look an order up.\"\"\"
    RUNS.append(order)
    await asyncio.Event().wait()  # never answers: the timeout ends it
    return "never"

def build():
    llm = LLM("openai/gpt-4o-mini", api_base=base, api_key="sk-durable-timeout")
    agent = Agent(role="Clerk", goal="Look up", tools=[lookup], llm=llm)
    return Ensemble(tasks=[Task(description="Task one", agent=agent),
                           Task(description="Task two", agent=agent)])

runtime = DurableRuntime(db, poll_interval=0.05)
runtime.register("orders", build)
runtime.launch()
first = runtime.run("orders", run_id="t1")
found = {"first": [o.raw for o in first.task_outputs], "runs": list(RUNS)}
client = DurableClient(db)
fork = client.result(client.fork("t1", from_task=2, new_run_id="t1-fork"), timeout=120)
found["fork"] = [o.raw for o in fork.task_outputs]
found["runs_after_fork"] = list(RUNS)
print(json.dumps(found))
client.close()
runtime.shutdown()
"""


def answering(body: dict[str, Any]) -> TextReply | ToolCallsReply:
    """Task one looks an order up and reports what the tool said; task two just answers."""
    if "Task one" not in str(body["messages"][1]["content"]):
        return TextReply("two done")
    last = body["messages"][-1]
    if last["role"] == "tool":
        return TextReply(f"one: {last['content']}")
    return ToolCallsReply(calls=(("lookup", json.dumps({"order": "A-1"})),))


def test_a_timed_out_call_is_checkpointed_and_replayed_not_run_again(tmp_path: Path) -> None:
    with OpenAICompatibleServer() as server:
        server.set_responder(answering)
        done = subprocess.run(
            [sys.executable, "-c", APP, f"sqlite:///{tmp_path}/runs.sqlite", server.base_url],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        found = json.loads(done.stdout.strip().splitlines()[-1])
        said = "one: Error: tool 'lookup' timed out after 0.2 s"
        assert found["first"] == [said, "two done"]
        assert found["runs"] == ["A-1"]
        assert found["fork"] == [said, "two done"]  # task one replayed from its checkpoints
        assert found["runs_after_fork"] == ["A-1"]  # the body never ran again
        assert len(server.requests) == 4  # task one's 2 turns, task two's 1, and its 1 again
        assert server.errors == []
