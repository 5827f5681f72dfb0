"""Run by test_mcp_durable.py in a fresh process (DBOS is process-global): a crew served over
MCP as durable runs of a DurableRuntime on SQLite. Prints what the test checks."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
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


IN_MODEL_TURN = threading.Event()  # set by the slow model (DBOS may run it on another loop)


async def _never_answers(messages: Any, tools: Any) -> str:
    IN_MODEL_TURN.set()
    await asyncio.Event().wait()  # until cancelled
    return "never"


def build_slow() -> Ensemble:
    agent = Agent(role="Writer", goal="Explain {topic}", llm=FunctionChatModel(_never_answers))
    return Ensemble(tasks=[Task(description="Explain {topic} slowly.", agent=agent)])


async def cancel_then_call(runtime: DurableRuntime) -> None:
    """The client cancels a call while its durable run is in a model turn; the run is recorded
    cancelled, and the server goes on serving."""
    server = mcp_server({"slow": build_slow, "explain": build}, durable=runtime)
    async with Client(server) as client:
        call = asyncio.ensure_future(client.call_tool("slow", {"topic": "tides"}))
        entered = await asyncio.to_thread(IN_MODEL_TURN.wait, 60)
        print("IN MODEL TURN", entered)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        status = ""
        for _ in range(1200):  # bounded: 60 s
            runs = await asyncio.to_thread(runtime.list_runs)
            slow = [run for run in runs if run.ensemble == "slow"]
            status = slow[0].status if slow else ""
            if status == "CANCELLED":
                break
            await asyncio.sleep(0.05)
        print("SLOW RUN", status)
        result = await client.call_tool("explain", {"topic": "tides"})
        print("NEXT CALL", result.is_error, result.content[0].text)  # type: ignore[union-attr]


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
    runtime.register("slow", build_slow)
    runtime.launch()
    try:
        if sys.argv[2:] == ["cancel"]:
            asyncio.run(cancel_then_call(runtime))
            return
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
