"""A durable app whose checkpoints refer to attachments by digest:
``python _kept_app.py DB COMMAND ARGS...``.

Task one reads a 2 MB ``Document`` run input and calls ``scan`` twice, which returns the same
1 MB ``Image`` each time; task two reads the document again and calls ``scan`` once more. Each
final answer names the sha256 of the bytes the model was given (read from the message, so bytes
loaded back from the database are checked, not their reference). Commands: ``run RUN_ID``,
``result RUN_ID`` (waits for an interrupted run as a worker), ``fork PARENT FROM_TASK NEW_ID``.
``KILL_AT_FINAL=two``: the process SIGKILLs itself as task two's final model request begins.
Prints JSON on its last line.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
from typing import Any

from agentensemble import Agent, Document, Ensemble, Image, Task, tool
from agentensemble.durable import DurableClient, DurableRuntime
from agentensemble.llm.types import ATTACHMENTS_KEY, ChatResponse
from agentensemble.testing.models import FunctionChatModel, tool_call

DB, COMMAND, *ARGS = sys.argv[1:]
MARKER = b"KEPT-BY-DIGEST-MARKER"
PDF = b"%PDF-1.4\n" + (MARKER + bytes(range(256))) * 7500  # about 2 MB
PNG = b"\x89PNG\r\n\x1a\n" + (MARKER + bytes(range(200, 256))) * 13000  # about 1 MB


@tool
def scan() -> Image:
    """The receipt's scan."""
    return Image(data=PNG)


def seen(messages: list[Any]) -> list[str]:
    """What the model was given: each attachment's kind and the sha256 of its bytes."""
    return [
        f"{a.kind}:{hashlib.sha256(a.data).hexdigest()[:12]}"
        for m in messages
        for a in m.get(ATTACHMENTS_KEY) or ()
    ]


def answer(messages: list[Any], tools: Any) -> ChatResponse | str:
    prompt = next(str(m.get("content")) for m in messages if m.get("role") == "user")
    task = "two" if "Task two" in prompt else "one"
    results = sum(1 for m in messages if m.get("role") == "tool")
    if results < (2 if task == "one" else 1):
        return tool_call("scan", {})
    if task == "two" and os.environ.get("KILL_AT_FINAL") == "two":
        os.kill(os.getpid(), signal.SIGKILL)
    return f"{task}: " + " ".join(seen(messages))


def build() -> Ensemble:
    clerk = Agent(role="Clerk", goal="Check", tools=[scan], llm=FunctionChatModel(answer))
    one = Task(description="Task one: is {invoice} paid?", agent=clerk, name="one")
    two = Task(description="Task two: file {invoice}", agent=clerk, context=[one], name="two")
    return Ensemble(tasks=[one, two])


runtime = DurableRuntime(DB)
runtime.register("kept", build)

if __name__ == "__main__":
    runtime.launch()
    if COMMAND == "run":
        output = runtime.run("kept", {"invoice": Document(data=PDF)}, run_id=ARGS[0])
    elif COMMAND == "result":
        output = runtime.result(ARGS[0])
    else:
        client = DurableClient(DB)
        forked = client.fork(ARGS[0], from_task=int(ARGS[1]), new_run_id=ARGS[2])
        client.close()
        output = runtime.result(forked)
    runtime.shutdown()
    expected = {
        "document": f"document:{hashlib.sha256(PDF).hexdigest()[:12]}",
        "image": f"image:{hashlib.sha256(PNG).hexdigest()[:12]}",
    }
    print(json.dumps({"tasks": [o.raw for o in output.task_outputs], "expected": expected}))
