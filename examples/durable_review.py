"""A run that waits for a human across a restart, offline: ``python examples/durable_review.py``.

A writer drafts an announcement and the draft must be reviewed before it is published. The run
is durable (``agentensemble.durable``, extra ``agentensemble[durable]``, SQLite in a temporary
folder): the worker process waiting for the review is killed, as a deploy would; the decision
arrives while nothing runs, from another process (here this script, as a web app or the
webhook endpoint of your review tool would, with ``DurableClient.decide``); a new worker
resumes the run, which publishes the edited draft. The drafting model call is not made again.

With no API key the writer is a scripted model (and says so); with ``OPENAI_API_KEY`` set it uses
``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any litellm model. See docs/durable.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from _model_choice import choose_model

from agentensemble import Agent, Ensemble, Task
from agentensemble.durable import DurableClient, DurableReviewHandler, DurableRuntime
from agentensemble.testing import ScriptedChatModel
from agentensemble_review import Review

RUN_ID = "announcement-1"


def build() -> Ensemble:
    model, _ = choose_model(ScriptedChatModel(["We ship the new release on Monday."]))
    writer = Agent(role="Writer", goal="Write short announcements", llm=model)
    draft = Task(
        description="Draft a one-line release announcement",
        agent=writer,
        review=Review.required(prompt="Approve the announcement?", timeout=timedelta(hours=24)),
        name="draft",
    )
    publish = Task(
        description="Publish the approved announcement",
        handler=lambda ctx: f"Published: {ctx.context_outputs[0].raw}",
        context=[draft],
        name="publish",
    )
    return Ensemble(tasks=[draft, publish], review_handler=DurableReviewHandler())


def worker(database: str) -> None:
    """Start (or resume) the run and print its output as JSON."""
    runtime = DurableRuntime(database)
    runtime.register("announce", build)
    runtime.launch()
    print("ready", flush=True)  # the database exists now: clients may connect
    output = runtime.run("announce", run_id=RUN_ID)
    runtime.shutdown()
    print(json.dumps({"tasks": [o.raw for o in output.task_outputs], "exit": output.exit_reason}))


def main() -> None:
    _, banner = choose_model(ScriptedChatModel([]))
    print(banner)
    folder = Path(tempfile.mkdtemp(prefix="agentensemble-durable-"))
    database = f"sqlite:///{folder}/runs.sqlite"
    me = [sys.executable, str(Path(__file__).absolute()), "--worker", database]

    first = subprocess.Popen(me, stdout=subprocess.PIPE, text=True)
    assert first.stdout is not None
    if first.stdout.readline().strip() != "ready":
        sys.exit("the worker did not start")
    client = DurableClient(database)
    review = None
    deadline = time.monotonic() + 60
    while review is None and time.monotonic() < deadline:
        pending = _pending(client)
        review = pending[0] if pending else None
        time.sleep(0.1)
    if review is None:
        first.kill()
        sys.exit("the run published no review within 60 s")
    print(f"Review waiting: {review['request']['output']!r}")
    first.kill()
    first.wait()
    print("Worker killed while the review waits (a deploy, a crash).")

    client.decide(RUN_ID, review["review_id"], "edit", revised_output="We ship on Tuesday.")
    print("Decision sent while no worker runs: edit to 'We ship on Tuesday.'")

    second = subprocess.run(me, capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(second.stdout.strip().splitlines()[-1])
    client.close()
    print("A new worker resumed the run:")
    for text in result["tasks"]:
        print(f"  {text}")
    print(f"Exit: {result['exit']}")


def _pending(client: DurableClient) -> list[dict[str, object]]:
    try:
        return client.pending_reviews(RUN_ID)
    except Exception:  # the run is not in the database yet
        return []


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        main()
