"""A durable app for the time-travel tests: ``python _fork_app.py DB WORKDIR COMMAND ARGS...``.

Two tasks, each a model turn calling a tool and a final answer; every model request and tool
call is appended to WORKDIR/calls.log, so a test sees what ran again and what was reused.
Commands: ``run RUN_ID TOPIC``, ``fork PARENT FROM_TASK NEW_ID [TOPIC]`` (then waits for the
fork as a worker; ``FORK_EDIT`` in the environment: the fork's edited output), ``result RUN_ID``
(waits for a queued or interrupted run as a worker), ``steps RUN_ID``. ``KILL_AT_FINAL=two``:
the process SIGKILLs itself as task two's final model request begins. Task two's answer says
when the context it was given was a person's edit (it starts with ``EDITED``). Prints JSON on
its last line.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableClient, DurableRuntime
from agentensemble.llm.types import ChatResponse
from agentensemble.testing.models import FunctionChatModel, tool_call

DB, WORKDIR, COMMAND, *ARGS = sys.argv[1:]
LOG = Path(WORKDIR) / "calls.log"


def log(line: str) -> None:
    with LOG.open("a") as file:
        file.write(line + "\n")


@tool
def note(text: str) -> str:
    """Write a note down."""
    log(f"tool {text}")
    return f"noted {text}\n\twith a tab"


def answer(messages: list[Any], tools: Any) -> ChatResponse | str:
    prompt = next(str(m.get("content")) for m in messages if m.get("role") == "user")
    task = "two" if "Task two" in prompt else "one"
    topic = prompt.split("about ", 1)[1].split()[0].strip(".") if "about " in prompt else "-"
    log(f"model {task}")
    if messages[-1].get("role") == "tool":
        if os.environ.get("KILL_AT_FINAL") == task:
            os.kill(os.getpid(), signal.SIGKILL)
        read = " (read EDITED)" if task == "two" and "EDITED" in prompt else ""
        return f"{task} on {topic}: {messages[-1].get('content')}{read}"
    return tool_call("note", {"text": f"{task}-{topic}"})


def build() -> Ensemble:
    writer = Agent(role="Writer", goal="Take notes", tools=[note], llm=FunctionChatModel(answer))
    one = Task(description="Task one about {topic}", agent=writer, name="one")
    two = Task(description="Task two about {topic}", agent=writer, context=[one], name="two")
    return Ensemble(tasks=[one, two])


runtime = DurableRuntime(DB)
runtime.register("notes", build)


def summary(output: Any) -> dict[str, Any]:
    return {"tasks": [o.raw for o in output.task_outputs], "run_id": output.run_id}


if __name__ == "__main__":
    if COMMAND == "steps":
        client = DurableClient(DB)
        steps = [
            {"task": s.task, "kind": s.kind, "name": s.name, "detail": s.detail, "output": s.output,
             "timed": s.started_at is not None and s.duration is not None}
            for s in client.steps(ARGS[0])
        ]  # fmt: skip
        client.close()
        print(json.dumps(steps))
        sys.exit(0)
    runtime.launch()
    if COMMAND == "run":
        result = summary(runtime.run("notes", {"topic": ARGS[1]}, run_id=ARGS[0]))
    elif COMMAND == "result":
        result = summary(runtime.result(ARGS[0]))
    else:
        parent, from_task, new_id = ARGS[0], int(ARGS[1]), ARGS[2]
        inputs = {"topic": ARGS[3]} if len(ARGS) > 3 else None
        client = DurableClient(DB)
        forked = client.fork(
            parent,
            from_task=from_task,
            new_run_id=new_id,
            inputs=inputs,
            edited_output=os.environ.get("FORK_EDIT"),
        )
        client.close()
        result = summary(runtime.result(forked))
        info = runtime.status(forked)
        result.update(forked_from=info.forked_from, fork_point=info.fork_point)
    runtime.shutdown()
    print(json.dumps(result))
