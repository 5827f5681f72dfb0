"""A durable app for the loop and graph crash tests, with scripted models.

Run as ``python _loops_app.py DB_URL WORKDIR RUN_ID KILL_AT [parallel]``: the process
SIGKILLs itself when its model call number KILL_AT (counted over every process, in
WORKDIR/calls.log) begins (0: never). A writer (with a tool) and a typed critic go round a
loop twice, then a graph goes research -> answer -> research -> answer (with ``parallel``:
the loop and the graph at once, in a PARALLEL ensemble). Every model call and tool body
appends a line to WORKDIR, so the test counts what ran. It prints the output as JSON on its
last line.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentensemble import Agent, Edge, Ensemble, Graph, Loop, Task, Workflow, tool
from agentensemble.durable import DurableRuntime
from agentensemble.testing import FunctionChatModel, tool_call

DB_URL, WORKDIR, RUN_ID, KILL_AT = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
PARALLEL = sys.argv[5:] == ["parallel"]
CALLS, EFFECTS = WORKDIR / "calls.log", WORKDIR / "effects.log"
REVISING = "Your previous answer"


class Verdict(BaseModel):
    approved: bool
    remarks: str


def count_call(who: str) -> None:
    with CALLS.open("a") as file:
        file.write(who + "\n")
    if len(CALLS.read_text().split()) == KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)


@tool
def note(text: str) -> str:
    """Write a draft's title down (a side effect the test counts)."""
    with EFFECTS.open("a") as file:
        file.write(text + "\n")
    return f"noted {text}"


def prompt(messages: list[dict[str, Any]]) -> str:
    return str(next(m["content"] for m in messages if m["role"] == "user"))


def writer(messages: list[dict[str, Any]], tools: Any) -> Any:
    count_call("writer")
    version = 2 if REVISING in prompt(messages) else 1
    if not any(m["role"] == "tool" for m in messages):
        return tool_call("note", {"text": f"v{version}"})
    return f"draft {version}"


def critic(messages: list[dict[str, Any]], tools: Any) -> Any:
    count_call("critic")
    approved = "draft 2" in prompt(messages)
    return Verdict(approved=approved, remarks="ok" if approved else "add detail").model_dump_json()


def researcher(messages: list[dict[str, Any]], tools: Any) -> Any:
    count_call("research")
    return "more notes" if REVISING in prompt(messages) else "notes"


def answerer(messages: list[dict[str, Any]], tools: Any) -> Any:
    count_call("answer")
    return "full answer" if REVISING in prompt(messages) else "THIN"


def build() -> Ensemble:
    write = Task(
        name="write",
        description="Write a draft",
        agent=Agent(role="Writer", goal="Write", tools=[note], llm=FunctionChatModel(writer)),
    )
    critique = Task(
        name="critique",
        description="Critique the draft",
        context=[write],
        output_type=Verdict,
        agent=Agent(role="Critic", goal="Judge", llm=FunctionChatModel(critic)),
    )
    loop = Loop(
        name="polish",
        body=[write, critique],
        until=lambda state: state.outputs["critique"].parsed.approved,
        max_iterations=3,
    )
    graph = Graph(
        name="support",
        start="research",
        states={
            "research": Task(
                description="Research",
                agent=Agent(role="Researcher", goal="Dig", llm=FunctionChatModel(researcher)),
            ),
            "answer": Task(
                description="Answer",
                agent=Agent(role="Answerer", goal="Answer", llm=FunctionChatModel(answerer)),
            ),
        },
        edges=[
            Edge("research", "answer"),
            Edge("answer", "research", when=lambda s: s.output.raw == "THIN"),
            Edge("answer", Graph.END),
        ],
    )
    return Ensemble(
        tasks=[loop, graph], workflow=Workflow.PARALLEL if PARALLEL else Workflow.SEQUENTIAL
    )


runtime = DurableRuntime(DB_URL)
runtime.register("loops", build)

if __name__ == "__main__":
    runtime.launch()
    output = runtime.run("loops", {}, run_id=RUN_ID)
    runtime.shutdown()
    print(
        json.dumps(
            {
                "raw": output.raw,
                "tasks": [[o.agent_role, o.raw] for o in output.task_outputs],
                "loops": {k: [v.iterations, v.stopped_by] for k, v in output.loops.items()},
                "graphs": {k: v.path for k, v in output.graphs.items()},
            }
        )
    )
