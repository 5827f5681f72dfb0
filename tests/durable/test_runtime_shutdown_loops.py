"""After a ``DurableRuntime`` shuts down, the process goes on running ensembles: DBOS made its
worker pool the default executor of the loops it ran in and shut the pool down with itself, so
``asyncio.to_thread`` (which the model lanes and tools use) failed on those loops for good. Found
as a test suite's later, unrelated runs failing with "cannot schedule new futures after
shutdown". Real DBOS on SQLite, in a process of its own (DBOS is one per process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import asyncio, sys
from agentensemble import Agent, Ensemble, Task
from agentensemble.testing import ScriptedChatModel
from agentensemble.durable import DurableRuntime
from agentensemble._base.background_loop import run_sync

def crew():
    agent = Agent(role="Writer", goal="Write", llm=ScriptedChatModel(["durable answer"]))
    return Ensemble(tasks=[Task(description="Write", agent=agent)])

async def in_a_loop_of_its_own(runtime):
    print((await runtime.arun("crew")).raw)
    runtime.shutdown()
    print(await asyncio.to_thread(lambda: "to_thread in the same loop"))

runtime = DurableRuntime("sqlite:///" + sys.argv[1] + "/a.sqlite")
runtime.register("crew", crew)
runtime.launch()
print(run_sync(runtime.arun("crew")).raw)  # on this thread's kept loop
runtime.shutdown()
print(run_sync(asyncio.to_thread(lambda: "to_thread on the kept loop")))
print(crew().run().raw)
runtime = DurableRuntime("sqlite:///" + sys.argv[1] + "/b.sqlite")
runtime.register("crew", crew)
runtime.launch()
asyncio.run(in_a_loop_of_its_own(runtime))
"""


def test_runs_and_to_thread_work_after_a_runtime_shut_down_in_the_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:5] == [
        "durable answer",
        "to_thread on the kept loop",
        "durable answer",
        "durable answer",
        "to_thread in the same loop",
    ]
