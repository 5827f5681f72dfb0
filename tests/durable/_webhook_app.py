"""A durable app whose review goes to a webhook (the reference review server).

``python _webhook_app.py DB_URL MODEL_URL REVIEW_URL WORKDIR RUN_ID start|resume task|tool``

- ``task``: a Writer (a model over HTTP) drafts; the draft's review (``Review.required``) is
  asked of the webhook; a handler task publishes what the reviewer let through.
- ``tool``: the Writer calls the tool ``publish``, which needs approval through the webhook
  (``@tool(requires_approval=Review.required(...))``); each run of its body appends the text it
  got to WORKDIR/published.log (the side effect the test counts).
- ``parallel``: two drafts written at once (``Workflow.PARALLEL``), each with its own review.
- ``two``: as ``tool`` with ``publish_twice``, whose body asks the reviewer a second question
  after its approval: two reviews within one durable step.

The review times out after $REVIEW_TIMEOUT seconds (600 by default) with on_timeout=EXIT_EARLY.
It writes its pid to WORKDIR/pid, prints ``ready`` once launched and the output as JSON (with
the review decisions it saw) on its last line.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from agentensemble import LLM, Agent, Ensemble, Task, Workflow, tool
from agentensemble.durable import DurableRuntime
from agentensemble.events import ReviewDecided
from agentensemble.tools import aask_reviewer
from agentensemble_review import (
    ExitEarly,
    OnTimeoutAction,
    Review,
    ReviewRequest,
    ReviewTiming,
    WebhookReviewHandler,
)

DB_URL, MODEL_URL, REVIEW_URL, WORKDIR, RUN_ID, COMMAND, MODE = sys.argv[1:8]
PUBLISHED = Path(WORKDIR) / "published.log"
TIMEOUT = timedelta(seconds=float(os.environ.get("REVIEW_TIMEOUT", "600")))
REVIEW = Review.required(timeout=TIMEOUT, on_timeout=OnTimeoutAction.EXIT_EARLY)
decisions: list[dict[str, Any]] = []


class Decisions:
    """Keeps every review decision of the run (with the reason of a timed-out one)."""

    def on_event(self, event: object) -> None:
        if isinstance(event, ReviewDecided):
            decisions.append({"decision": event.decision, **event.details})


@tool(requires_approval=REVIEW)
def publish(text: str) -> str:
    """Publish the announcement (a side effect the test counts)."""
    with PUBLISHED.open("a") as file:
        file.write(text + "\n")
    return f"published {text}"


@tool(requires_approval=REVIEW)
async def publish_twice(text: str) -> str:
    """Publish the announcement after a second confirmation (two reviews in one step)."""
    question = ReviewRequest(
        timing=ReviewTiming.DURING_EXECUTION,
        tool_name="publish_twice",
        output=f"Really publish {text!r} to every customer?",
        timeout=TIMEOUT,
    )
    if isinstance(await aask_reviewer(question), ExitEarly):
        return "not confirmed"
    with PUBLISHED.open("a") as file:
        file.write(text + "\n")
    return f"published {text}"


def build() -> Ensemble:
    model = LLM("openai/test-model", api_base=MODEL_URL, api_key="sk-test-durable-0000")
    handler = WebhookReviewHandler(REVIEW_URL, poll_interval=0.05, max_poll_interval=0.2)
    if MODE in ("tool", "two"):
        tools = [publish] if MODE == "tool" else [publish_twice]
        writer = Agent(role="Writer", goal="Publish announcements", tools=tools, llm=model)
        task = Task(description="Publish the announcement", agent=writer, name="publish")
        return Ensemble(tasks=[task], review_handler=handler, listeners=[Decisions()])
    writer = Agent(role="Writer", goal="Draft announcements", llm=model)
    if MODE == "parallel":
        drafts = [
            Task(description=f"Draft the {what}", agent=writer, review=REVIEW, name=what)
            for what in ("announcement", "FAQ")
        ]
        return Ensemble(
            tasks=drafts,
            workflow=Workflow.PARALLEL,
            review_handler=handler,
            listeners=[Decisions()],
        )
    draft = Task(description="Draft the announcement", agent=writer, review=REVIEW, name="draft")
    publish_task = Task(
        description="Publish the reviewed draft",
        handler=lambda ctx: f"Published: {ctx.context_outputs[0].raw}",
        context=[draft],
        name="publish",
    )
    return Ensemble(tasks=[draft, publish_task], review_handler=handler, listeners=[Decisions()])


runtime = DurableRuntime(DB_URL)
runtime.register("announce", build)

if __name__ == "__main__":
    (Path(WORKDIR) / "pid").write_text(str(os.getpid()))
    runtime.launch()
    print("ready", flush=True)
    output = (
        runtime.run("announce", {}, run_id=RUN_ID) if COMMAND == "start" else runtime.result(RUN_ID)
    )
    runtime.shutdown()
    print(
        json.dumps(
            {
                "raw": output.raw,
                "exit": output.exit_reason.value,
                "tasks": [o.raw for o in output.task_outputs],
                "decisions": decisions,
            }
        )
    )
