"""A fallback chain and a run budget in a durable run: the model turn is one step, so a resumed
(forked) run uses the checkpointed answer, whichever model gave it, and sends nothing again;
the budget's counts are rebuilt from the checkpointed steps, so a resume spends no more than an
uninterrupted run could."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentensemble.testing import Fault, OpenAICompatibleServer, TextReply, ToolCallsReply

APP = """
import json, sys
from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task, UsageLimits, tool
from agentensemble.durable import DurableClient, DurableRuntime

db, down, up = sys.argv[1:4]
LIMIT = {"model_calls": 4}

@tool
def note(text: str) -> str:
    \"\"\"Note a text.\"\"\"
    return "noted " + text

def build():
    once = RetryPolicy(max_attempts=1)
    llm = LLM("openai/gpt-4o", api_base=down, api_key="sk-durable-down", retry_policy=once,
              fallbacks=[LLM("openai/gpt-4o-mini", api_base=up, api_key="sk-durable-up",
                             retry_policy=once)])
    agent = Agent(role="Writer", goal="Note", tools=[note], llm=llm)
    return Ensemble(tasks=[Task(description="Task one", agent=agent),
                           Task(description="Task two", agent=agent)],
                    limits=UsageLimits(**LIMIT))

runtime = DurableRuntime(db, poll_interval=0.05)
runtime.register("notes", build)
runtime.launch()
first = runtime.run("notes", run_id="r1")
found = {"first": [o.raw for o in first.task_outputs]}
print("phase one done", flush=True)
LIMIT["model_calls"] = 3  # the fork's budget: task one's two checkpointed calls count
client = DurableClient(db)
try:
    client.result(client.fork("r1", from_task=2, new_run_id="r1-fork"), timeout=120)
    found["fork"] = "completed"
except Exception as error:
    found["fork"] = type(error).__name__ + ": " + str(error)
    found["kept"] = [o.raw for o in getattr(error, "completed_outputs", [])]
print(json.dumps(found))
client.close()
runtime.shutdown()
"""


def answering(body: dict[str, Any]) -> TextReply | ToolCallsReply:
    """A note first, then an answer naming the task (a function of the conversation)."""
    task = "one" if "Task one" in str(body["messages"][1]["content"]) else "two"
    if body["messages"][-1]["role"] == "tool":
        return TextReply(f"{task} done")
    return ToolCallsReply(calls=(("note", json.dumps({"text": task})),))


def test_a_fork_reuses_the_fallbacks_checkpointed_answers_and_keeps_the_budget(
    tmp_path: Path,
) -> None:
    with OpenAICompatibleServer() as down, OpenAICompatibleServer() as up:
        down.set_responder(lambda body: Fault.http(503))
        up.set_responder(answering)
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                APP,
                f"sqlite:///{tmp_path}/runs.sqlite",
                down.base_url,
                up.base_url,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        found = json.loads(done.stdout.strip().splitlines()[-1])
        assert found["first"] == ["one done", "two done"]  # every turn answered by the backup
        # run one: 4 turns, each tried on the primary then answered by the backup; the fork:
        # task one's 2 turns replayed from their checkpoints (nothing sent), task two's first
        # turn is the budget's third call, its second would be a fourth and is never sent
        assert len(down.requests) == 5
        assert len(up.requests) == 5
        assert "UsageLimitExceeded" in found["fork"] and "model_calls=3" in found["fork"]
        assert found["kept"] == ["one done"]
        assert down.errors == [] and up.errors == []
