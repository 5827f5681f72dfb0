"""A durable app whose run waits for a human: ``python _review_app.py DB_URL start|resume RUN_ID``.

Task "draft" writes a draft and asks for a review (DurableReviewHandler, timeout from
$REVIEW_TIMEOUT seconds); task "publish" publishes what the reviewer let through. With
$REVIEW_APP_DIE_AT_WAIT set, the process kills itself (SIGKILL) as the run starts waiting for
the decision: the review is published, the wait not yet recorded, and nobody holds the run.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta

from agentensemble import Ensemble, Task
from agentensemble.durable import DurableReviewHandler, DurableRuntime
from agentensemble_review import OnTimeoutAction, Review

DB_URL, COMMAND, RUN_ID = sys.argv[1:4]


def build() -> Ensemble:
    timeout = timedelta(seconds=float(os.environ.get("REVIEW_TIMEOUT", "600")))
    draft = Task(
        description="Draft the announcement",
        handler=lambda ctx: "Draft: we ship on Monday",
        review=Review.required(timeout=timeout, on_timeout=OnTimeoutAction.EXIT_EARLY),
        name="draft",
    )
    publish = Task(
        description="Publish the reviewed draft",
        handler=lambda ctx: f"Published: {ctx.context_outputs[0].raw}",
        context=[draft],
        name="publish",
    )
    return Ensemble(tasks=[draft, publish], review_handler=DurableReviewHandler())


runtime = DurableRuntime(DB_URL)
runtime.register("announce", build)

if os.environ.get("REVIEW_APP_DIE_AT_WAIT"):
    import signal

    from dbos import DBOS

    async def _die(*args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    DBOS.recv_async = _die  # type: ignore[method-assign]

if __name__ == "__main__":
    runtime.launch()
    print("ready", flush=True)  # the database exists: clients may connect
    if COMMAND == "start":
        output = runtime.run("announce", {}, run_id=RUN_ID)
    else:
        output = runtime.result(RUN_ID)
    runtime.shutdown()
    print(
        json.dumps(
            {
                "raw": output.raw,
                "exit": output.exit_reason.value,
                "tasks": [o.raw for o in output.task_outputs],
            }
        )
    )
