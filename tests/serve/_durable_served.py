"""Run by test_mcp_durable.py in a fresh process (DBOS is process-global): a crew served over
MCP as durable runs of a DurableRuntime on SQLite. Prints what the test checks."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

from _durable_app_common import (
    IN_MODEL_TURN,
    answering,
    build_slow,
    launched_runtime,
    status_once_cancelled,
)
from mcp import Client

from agentensemble import Ensemble
from agentensemble.durable import DurableRuntime
from agentensemble.errors import ConfigurationError
from agentensemble.serve import mcp_server


def build() -> Ensemble:
    return answering("durable answer")


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
        print("SLOW RUN", await status_once_cancelled(runtime, "slow"))
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
    runtime = launched_runtime(sys.argv[1], {"explain": build, "slow": build_slow})
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
