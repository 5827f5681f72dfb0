"""A durable app whose model turns ask several calls at once that make steps of their own:
``python _concurrency_app.py DB_URL WORKDIR MODE start|resume RUN_ID`` (MODE ``delegate`` or
``approve``).

``delegate``: a manager delegates to a Researcher and a Writer in one turn. Each worker's first
model call waits until the other's has begun (a barrier: run one after another, the first would
wait forever and the run fails). With ``KILL_AT_SECOND=1`` the process SIGKILLs itself in the
Researcher's second model call, once the Writer's answer is recorded in the database, so the
one request in flight at the kill is known.

``approve``: an agent calls ``publish`` twice in one turn; each call waits for a human's
approval (DurableReviewHandler).

``pipeline``: an agent calls a pipeline ``draft -> publish`` whose inner ``publish`` asks a
human's approval (DurableReviewHandler): an approval asked inside a tool.

``nested``: an agent calls ``ask_team``, a tool whose body runs an ensemble whose agent calls
``publish`` (DurableReviewHandler): an approval asked inside a step. With $APPROVAL_TIMEOUT
set, ``publish``'s approval times out after that many seconds (EXIT_EARLY); with
$DIE_AT_STEP_WAIT set, the process SIGKILLs itself as the step starts waiting for the decision
(the review published, the step not ended, nobody holds the run).

Every model call and every tool body appends a line to a file in WORKDIR, so the test counts
what ran in all processes. It prints ``ready`` once launched and the output as JSON last.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from agentensemble import Agent, Ensemble, Task, ToolPipeline, Workflow, tool
from agentensemble.durable import DurableReviewHandler, DurableRuntime
from agentensemble.testing import FunctionChatModel, tool_calls
from agentensemble_review import Review

DB_URL, WORKDIR, MODE, COMMAND, RUN_ID = sys.argv[1:6]
CALLS, EFFECTS = Path(WORKDIR) / "calls.log", Path(WORKDIR) / "effects.log"
arrived: set[str] = set()


def log(path: Path, line: str) -> None:
    with path.open("a") as file:
        file.write(line + "\n")


async def barrier(who: str) -> None:
    """Wait until both workers' first model calls have begun (bounded)."""
    arrived.add(who)
    for _ in range(3000):
        if {"Researcher", "Writer"} <= arrived:
            return
        await asyncio.sleep(0.01)
    raise RuntimeError(f"{who} waited 30 s for the other delegation: they did not run at once")


def recorded(step_name: str) -> bool:
    from dbos import DBOS

    return any(
        s["function_name"] == step_name and s["output"] is not None
        for s in DBOS.list_workflow_steps(RUN_ID)
    )


async def wait_recorded(step_name: str) -> None:
    loop = asyncio.get_running_loop()
    for _ in range(600):  # read in a thread of no run: not a step of the run
        if await loop.run_in_executor(None, recorded, step_name):
            return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{step_name} was never recorded")


@tool
def note(text: str) -> str:
    """Write a fact down (a side effect the test counts)."""
    log(EFFECTS, text)
    return f"noted {text}"


@tool(
    requires_approval=Review.required(timeout=float(os.environ["APPROVAL_TIMEOUT"]))
    if os.environ.get("APPROVAL_TIMEOUT")
    else True
)
def publish(text: str) -> str:
    """Publish a post (a side effect a human must approve)."""
    log(EFFECTS, text.replace(" ", "_"))
    return f"published {text}"


@tool
def draft(topic: str) -> str:
    """Draft a post on a topic (a side effect the test counts)."""
    log(EFFECTS, "draft")
    return f"draft on {topic}"


def pipeliner(messages: list[dict[str, Any]], tools: Any) -> Any:
    log(CALLS, "pipeliner")
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return tool_calls(("draft_then_publish", {"topic": "tides"}))
    return "Done: " + results[0]


def inner_writer(messages: list[dict[str, Any]], tools: Any) -> Any:
    log(CALLS, "inner")
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return tool_calls(("publish", {"text": "team post"}))
    return "Team: " + results[0]


@tool
async def ask_team(topic: str) -> str:
    """Ask the publishing team to post about a topic."""
    agent = Agent(role="Inner", goal="Post", tools=[publish], llm=FunctionChatModel(inner_writer))
    team = Ensemble(
        tasks=[Task(description=f"Post about {topic}", agent=agent)],
        review_handler=DurableReviewHandler(),
    )
    return (await team.arun()).raw


def outer(messages: list[dict[str, Any]], tools: Any) -> Any:
    log(CALLS, "outer")
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return tool_calls(("ask_team", {"topic": "tides"}))
    return "Outer: " + results[0]


def manager(messages: list[dict[str, Any]], tools: Any) -> Any:
    log(CALLS, "manager")
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return tool_calls(
            ("delegate_task", {"agent_role": "Researcher", "instructions": "Find facts"}),
            ("delegate_task", {"agent_role": "Writer", "instructions": "Write a line"}),
        )
    return "Report: " + " | ".join(results)


async def researcher(messages: list[dict[str, Any]], tools: Any) -> Any:
    log(CALLS, "researcher")
    if not any(m["role"] == "tool" for m in messages):
        await barrier("Researcher")
        return tool_calls(("note", {"text": "moon"}))
    if os.environ.get("KILL_AT_SECOND") == "1":
        await wait_recorded("task1:model:Writer")
        os.kill(os.getpid(), signal.SIGKILL)
    return "the moon pulls the tides"


async def writer(messages: list[dict[str, Any]], tools: Any) -> Any:
    log(CALLS, "writer")
    await barrier("Writer")
    return "Tides rise twice a day."


def poster(messages: list[dict[str, Any]], tools: Any) -> Any:
    log(CALLS, "poster")
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return tool_calls(("publish", {"text": "post A"}), ("publish", {"text": "post B"}))
    return "Done: " + " | ".join(results)


def build_team() -> Ensemble:
    return Ensemble(
        tasks=[Task(description="Report on tides", expected_output="A report")],
        agents=[
            Agent(
                role="Researcher",
                goal="Find facts",
                tools=[note],
                llm=FunctionChatModel(researcher),
            ),
            Agent(role="Writer", goal="Write well", llm=FunctionChatModel(writer)),
        ],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=FunctionChatModel(manager),
    )


def build_poster() -> Ensemble:
    agent = Agent(role="Poster", goal="Post", tools=[publish], llm=FunctionChatModel(poster))
    return Ensemble(
        tasks=[Task(description="Publish two posts", agent=agent)],
        review_handler=DurableReviewHandler(),
    )


def build_pipeline() -> Ensemble:
    agent = Agent(
        role="Pipeliner",
        goal="Post",
        tools=[ToolPipeline.of(draft, publish)],
        llm=FunctionChatModel(pipeliner),
    )
    return Ensemble(
        tasks=[Task(description="Draft and publish a post", agent=agent)],
        review_handler=DurableReviewHandler(),
    )


def build_nested() -> Ensemble:
    agent = Agent(role="Outer", goal="Delegate", tools=[ask_team], llm=FunctionChatModel(outer))
    return Ensemble(tasks=[Task(description="Get a post out", agent=agent)])


runtime = DurableRuntime(DB_URL)
if os.environ.get("DIE_AT_STEP_WAIT"):
    from agentensemble.durable import _dbos

    def _die(*args: object) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    _dbos.first_message = _die  # type: ignore[assignment]  # the step's wait for a decision
runtime.register("team", build_team)
runtime.register("poster", build_poster)
runtime.register("pipeline", build_pipeline)
runtime.register("nested", build_nested)

if __name__ == "__main__":
    runtime.launch()
    print("ready", flush=True)
    name = {"delegate": "team", "approve": "poster", "pipeline": "pipeline", "nested": "nested"}[
        MODE
    ]
    output = runtime.run(name, {}, run_id=RUN_ID) if COMMAND == "start" else runtime.result(RUN_ID)
    runtime.shutdown()
    calls = [[c.name, c.arguments, c.output] for o in output.task_outputs for c in o.tool_calls]
    print(json.dumps({"raw": output.raw, "tool_calls": calls}))
