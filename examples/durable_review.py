"""A run waits for a webhook decision across a restart, offline: examples/durable_review.py.

A writer drafts an announcement, and the draft must be reviewed before it is published. The run
is durable (``agentensemble.durable``, extra ``agentensemble-py[durable]``, SQLite in a temporary
folder) and its review goes to a webhook: the reference review server
(``agentensemble_review.ReviewServer``), started here on 127.0.0.1.

1. A worker process starts the run; the review appears on the server's page.
2. The worker is killed while the review waits, as a deploy or a crash would.
3. A reviewer edits the draft on the review page (here: the same HTTP call the page's Edit
   button makes) while no worker runs.
4. A new worker resumes the run. Inside a durable run a review's id is stable, so the new
   worker asks the server about the same review, gets the decision, and publishes the edited
   draft. The server still holds one review; the drafting model call is not made again.

The other way to decide, with no webhook server at all, is ``DurableReviewHandler`` and
``DurableClient.decide`` (docs/durable.md, "Waiting days for a human").

With no API key the writer is a scripted model (and says so); with ``OPENAI_API_KEY`` set it uses
``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any litellm model.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import httpx
from _model_choice import choose_model

from agentensemble import Agent, Ensemble, Task
from agentensemble.durable import DurableRuntime
from agentensemble.testing import ScriptedChatModel
from agentensemble_review import Review, ReviewServer, WebhookReviewHandler

RUN_ID = "announcement-1"


def build(review_url: str) -> Ensemble:
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
    handler = WebhookReviewHandler(review_url, poll_interval=0.2, max_poll_interval=1.0)
    return Ensemble(tasks=[draft, publish], review_handler=handler)


def worker(database: str, review_url: str) -> None:
    """Start (or resume) the run and print its output as JSON."""
    runtime = DurableRuntime(database)
    runtime.register("announce", lambda: build(review_url))
    runtime.launch()  # also resumes the run a killed worker left unfinished
    output = runtime.run("announce", run_id=RUN_ID)
    runtime.shutdown()
    print(json.dumps({"tasks": [o.raw for o in output.task_outputs], "exit": output.exit_reason}))


def main() -> None:
    _, banner = choose_model(ScriptedChatModel([]))
    print(banner)
    folder = Path(tempfile.mkdtemp(prefix="agentensemble-durable-"))
    database = f"sqlite:///{folder}/runs.sqlite"
    with ReviewServer(port=0) as server:
        print(f"Review page: {server.page_url}")
        me = [sys.executable, str(Path(__file__).absolute()), "--worker", database]
        me.append(server.reviews_url)

        first = subprocess.Popen(me, stdout=subprocess.PIPE, text=True)
        try:
            review = server.wait_for_pending(timeout=60)
        except TimeoutError:
            first.kill()
            sys.exit("the run posted no review within 60 s")
        print(f"Review waiting: {review['output']!r} (id {review['id']})")
        first.kill()
        first.wait()
        print("Worker killed while the review waits (a deploy, a crash).")

        # What the page's Edit button sends: the decision, with the page's token.
        answer = httpx.post(
            f"{server.url}/reviews/{review['id']}/decision",
            json={"decision": "edit", "revised_output": "We ship on Tuesday."},
            headers={"Authorization": f"Bearer {server.token}"},
            timeout=10,
        )
        answer.raise_for_status()
        print("A reviewer edited it on the review page while no worker runs: 'We ship on Tuesday.'")

        second = subprocess.run(me, capture_output=True, text=True, timeout=120, check=True)
        result = json.loads(second.stdout.strip().splitlines()[-1])
        held = server.store.all()
        print(f"A new worker resumed the run; reviews on the server: {len(held)}, id {held[0].id}")
    for text in result["tasks"]:
        print(f"  {text}")
    print(f"Exit: {result['exit']}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        main()
