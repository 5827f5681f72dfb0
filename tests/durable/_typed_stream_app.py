"""A durable app streaming a typed task: ``python _typed_stream_app.py DB_URL RUN_ID``.

Runs RUN_ID through ``DurableRuntime.astream`` (a scripted model: no network) and prints each
``PartialOutput`` as ``partial <json>``, then the final parsed output as ``final <json>``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

from pydantic import BaseModel

from agentensemble import Agent, Ensemble, PartialOutput, Task, TaskCompleted
from agentensemble.durable import DurableRuntime
from agentensemble.testing import ScriptedChatModel

DB_URL, RUN_ID = sys.argv[1:3]


class Report(BaseModel):
    title: str
    score: int
    tags: list[str]


def build() -> Ensemble:
    model = ScriptedChatModel(['{"title": "Durable report", "score": 4, "tags": ["a", "b"]}'])
    agent = Agent(role="Analyst", goal="Report", llm=model)
    return Ensemble(tasks=[Task(description="Report", agent=agent, output_type=Report, name="r")])


runtime = DurableRuntime(DB_URL)
runtime.register("typed", build)


async def watch() -> None:
    async for event in runtime.astream("typed", {}, run_id=RUN_ID):
        if isinstance(event, PartialOutput):
            print("partial", json.dumps([event.task_name, event.partial]), flush=True)
        elif isinstance(event, TaskCompleted):
            parsed: Any = event.output.parsed
            print("final", json.dumps(parsed.model_dump()), flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    runtime.launch()
    asyncio.run(watch())
    runtime.shutdown()
