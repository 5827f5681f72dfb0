"""A durable app whose tool call waits for a human's approval:
``python _approval_app.py DB_URL WORKDIR start|resume RUN_ID``.

The agent calls ``publish`` (requires_approval, DurableReviewHandler) and then answers. Every
model call and every publish body appends a line to a file in WORKDIR, so the test counts what
ran in all processes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableReviewHandler, DurableRuntime
from agentensemble.testing import FunctionChatModel, tool_call

DB_URL, WORKDIR, COMMAND, RUN_ID = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]


@tool(requires_approval=True)
def publish(text: str) -> str:
    """Publish the announcement (a side effect a human must approve)."""
    with (WORKDIR / "published.log").open("a") as file:
        file.write(text + "\n")
    return f"published {text!r}"


def model(messages: list[dict[str, Any]], tools: Any) -> Any:
    with (WORKDIR / "model.log").open("a") as file:
        file.write("call\n")
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return tool_call("publish", {"text": "We ship on Monday"})
    return f"Done: {results[0]}"


def build() -> Ensemble:
    writer = Agent(role="Writer", goal="Announce", tools=[publish], llm=FunctionChatModel(model))
    return Ensemble(
        tasks=[Task(description="Publish the announcement", agent=writer)],
        review_handler=DurableReviewHandler(),
    )


runtime = DurableRuntime(DB_URL)
runtime.register("announce", build)

if __name__ == "__main__":
    runtime.launch()
    print("ready", flush=True)
    if COMMAND == "start":
        output = runtime.run("announce", {}, run_id=RUN_ID)
    else:
        output = runtime.result(RUN_ID)
    runtime.shutdown()
    record = output.task_outputs[0].tool_calls[0]
    print(json.dumps({"raw": output.raw, "ran_with": record.arguments}))
