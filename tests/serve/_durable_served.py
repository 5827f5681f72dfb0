"""Run by test_mcp_durable.py in a fresh process (DBOS is process-global): a crew served over
MCP as durable runs of a DurableRuntime on SQLite. Prints what the test checks."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from mcp import Client

from agentensemble import Agent, Ensemble, Task
from agentensemble.durable import DurableRuntime
from agentensemble.errors import ConfigurationError
from agentensemble.serve import mcp_server
from agentensemble.testing import FunctionChatModel


def build() -> Ensemble:
    agent = Agent(
        role="Writer", goal="Explain {topic}", llm=FunctionChatModel(lambda m, t: "durable answer")
    )
    return Ensemble(tasks=[Task(description="Explain {topic}.", agent=agent)])


async def call(runtime: DurableRuntime) -> None:
    progress: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with Client(mcp_server({"explain": build}, durable=runtime)) as client:
        result = await client.call_tool(
            "explain", {"topic": "tides"}, progress_callback=on_progress
        )
    print("RESULT", result.is_error, result.content[0].text)  # type: ignore[union-attr]
    print("PROGRESS", progress)


def main() -> None:
    runtime = DurableRuntime(f"sqlite:///{sys.argv[1]}/runs.sqlite")
    runtime.register("explain", build)
    runtime.launch()
    try:
        try:
            mcp_server({"unregistered": build}, durable=runtime)
        except ConfigurationError as error:
            print("REFUSED", error)
        asyncio.run(call(runtime))
        print("RUNS", [(run.ensemble, run.status) for run in runtime.list_runs()])
    finally:
        runtime.shutdown()


if __name__ == "__main__":
    main()
