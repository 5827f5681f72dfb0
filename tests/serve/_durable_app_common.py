"""What the durable-serving apps (``_durable_served.py`` for MCP, ``_durable_a2a.py`` for A2A)
share: the ensembles they serve, a runtime on SQLite, the wait for a cancelled run, and, for the
tests, running an app in a fresh process (DBOS is process-global)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from agentensemble import Agent, Ensemble, Task
from agentensemble.testing import FunctionChatModel

ROOT = Path(__file__).resolve().parents[2]

IN_MODEL_TURN = threading.Event()  # set by the slow model (DBOS may run it on another loop)


def answering(answer: str) -> Ensemble:
    """A one-task ensemble whose model always answers ``answer``."""
    agent = Agent(role="Writer", goal="Explain {topic}", llm=FunctionChatModel(lambda m, t: answer))
    return Ensemble(tasks=[Task(description="Explain {topic}.", agent=agent)])


async def _never_answers(messages: Any, tools: Any) -> str:
    IN_MODEL_TURN.set()
    await asyncio.Event().wait()  # until cancelled
    return "never"


def build_slow() -> Ensemble:
    """A one-task ensemble whose model turn lasts until it is cancelled."""
    agent = Agent(role="Writer", goal="Explain {topic}", llm=FunctionChatModel(_never_answers))
    return Ensemble(tasks=[Task(description="Explain {topic} slowly.", agent=agent)])


def launched_runtime(folder: str, builders: dict[str, Any]) -> Any:
    """A DurableRuntime on ``folder``/runs.sqlite with ``builders`` registered, launched."""
    from agentensemble.durable import DurableRuntime

    runtime = DurableRuntime(f"sqlite:///{folder}/runs.sqlite")
    for name, build in builders.items():
        runtime.register(name, build)
    runtime.launch()
    return runtime


async def status_once_cancelled(runtime: Any, ensemble: str) -> str:
    """The status of ``ensemble``'s run, waited for (bounded: 60 s) until it reads CANCELLED."""
    status = ""
    for _ in range(1200):
        runs = await asyncio.to_thread(runtime.list_runs)
        status = next((run.status for run in runs if run.ensemble == ensemble), "")
        if status == "CANCELLED":
            break
        await asyncio.sleep(0.05)
    return status


def run_app(app: str, *args: str, timeout: float = 120) -> list[str]:
    """Run the app script ``app`` (beside this file) in a fresh interpreter on this checkout;
    its printed lines (the test fails with its stderr when it does)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name(app)), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()
