"""A durable app given a Document as a run input, whose tool returns an Image:
``python _attachments_app.py DB_URL RUN_ID``; prints what the model was sent as JSON."""

from __future__ import annotations

import json
import sys

from agentensemble import Agent, Document, Ensemble, Image, Task, tool
from agentensemble.durable import DurableRuntime
from agentensemble.llm.types import ATTACHMENTS_KEY
from agentensemble.testing import ScriptedChatModel, tool_call

DB_URL, RUN_ID = sys.argv[1], sys.argv[2]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n"
MODEL = ScriptedChatModel([tool_call("scan"), "Invoice 7 is paid."])


@tool
def scan() -> Image:
    """The receipt's scan."""
    return Image(data=PNG)


def build() -> Ensemble:
    agent = Agent(role="Clerk", goal="Check", tools=[scan], llm=MODEL)
    return Ensemble(tasks=[Task(description="Is {invoice} paid?", agent=agent)])


runtime = DurableRuntime(DB_URL)
runtime.register("check", build)

if __name__ == "__main__":
    runtime.launch()
    output = runtime.run("check", {"invoice": Document(data=PDF)}, run_id=RUN_ID)
    runtime.shutdown()
    sent = [
        [repr(a) for m in request.messages for a in m.get(ATTACHMENTS_KEY) or ()]
        for request in MODEL.requests
    ]
    print(
        json.dumps(
            {"raw": output.raw, "sent": sent, "tool": output.task_outputs[0].tool_calls[0].output}
        )
    )
