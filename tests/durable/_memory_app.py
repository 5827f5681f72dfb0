"""A durable app with task memory, for tests/durable/test_memory_resume.py: two tasks that search
and write the scope ``kettle`` of a SQLite store in WORKDIR, a model over HTTP.

Run as ``python _memory_app.py DB_URL BASE_URL WORKDIR RUN_ID``: it writes its pid to
WORKDIR/pid, runs (or resumes) RUN_ID and prints the task outputs as JSON on its last line.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from agentensemble import LLM, Agent, Ensemble, Task
from agentensemble.durable import DurableRuntime
from agentensemble.memory import SQLiteMemory

DB_URL, BASE_URL, WORKDIR, RUN_ID = sys.argv[1:5]


def build() -> Ensemble:
    model = LLM("openai/test-model", api_base=BASE_URL, api_key="sk-test-durable-memory")
    writer = Agent(role="Writer", goal="Answer about kettles", llm=model)
    return Ensemble(
        tasks=[
            Task(description="Task one: draft the kettle reply", agent=writer, memory=["kettle"]),
            Task(description="Task two: polish the kettle reply", agent=writer, memory=["kettle"]),
        ],
        memory=SQLiteMemory(Path(WORKDIR) / "memory.sqlite"),
    )


runtime = DurableRuntime(DB_URL)
runtime.register("memory", build)

if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    (Path(WORKDIR) / "pid").write_text(str(os.getpid()))
    runtime.launch()
    output = runtime.run("memory", {}, run_id=RUN_ID)
    runtime.shutdown()
    print(json.dumps([o.raw for o in output.task_outputs]))
