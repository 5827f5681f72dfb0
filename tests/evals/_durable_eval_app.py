"""A durable app for the evals tests: a geographer registered on a DurableRuntime.

Workers: ``agentensemble durable worker _durable_eval_app --worker-id w1``; the
evaluation itself: ``python _durable_eval_app.py EVAL_ID REPEAT`` (a worker too), which prints
the report as JSON on its last line. ``AGENTENSEMBLE_DATABASE_URL`` names the database and
``EVAL_APP_LOG`` the file that gets a line per model request (``country turn worker``): what
was paid for, and where. ``EVAL_APP_HANG=w1`` makes worker w1 hang in its answering turns.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.durable import DurableRuntime
from agentensemble.evals import Case, Contains, Dataset, ToolCalled, evaluate
from agentensemble.testing import FunctionChatModel, tool_call

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Peru": "Lima"}
DATASET = Dataset(
    name="capitals, durably",
    evaluators=[ToolCalled("capital_of", times=1)],
    cases=[
        Case(name=country.lower(), inputs={"country": country}, evaluators=[Contains(city)])
        for country, city in CAPITALS.items()
    ],
)
runtime = DurableRuntime(worker_concurrency=int(os.environ.get("EVAL_APP_CONCURRENCY", "2")))


@tool
def capital_of(country: str) -> str:
    """The capital city of a country."""
    return CAPITALS.get(country, "unknown")


def answer(messages: Sequence[Any], tools: Any) -> Any:
    prompt = next(str(m["content"]) for m in messages if m["role"] == "user")
    country = prompt.split("capital of ", 1)[1].split("?", 1)[0]
    answered = messages[-1]["role"] == "tool"
    with open(os.environ["EVAL_APP_LOG"], "a") as log:
        log.write(f"{country} {'answer' if answered else 'call'} {runtime.worker_id}\n")
    time.sleep(float(os.environ.get("EVAL_APP_SLOW", "0")))
    if answered and os.environ.get("EVAL_APP_HANG") == runtime.worker_id:
        time.sleep(300)  # stuck after its first call was checkpointed: a worker to kill
    if answered:
        return f"The capital is {messages[-1]['content']}."
    return tool_call("capital_of", {"country": country})


def build() -> Ensemble:
    agent = Agent(role="Geographer", goal="Name capitals", tools=[capital_of])
    agent.llm = FunctionChatModel(answer)
    return Ensemble(tasks=[Task(description="What is the capital of {country}?", agent=agent)])


runtime.register("geographer", build)

if __name__ == "__main__":
    runtime.launch()
    try:
        report = evaluate(
            "geographer",
            DATASET,
            runtime=runtime,
            eval_id=sys.argv[1],
            repeat=int(sys.argv[2]),
            max_concurrency=8,
        )
    finally:
        runtime.shutdown()
    print(report.to_json().replace("\n", " "))
