"""Streamed text reaches the console: ``astream`` token deltas, merged per model call."""

from __future__ import annotations

import asyncio

from _web_support import api_client

from agentensemble import Agent, Ensemble, Task
from agentensemble.testing import ScriptedChatModel
from agentensemble_web import WebConsole, WebConsoleServer


def test_streamed_tokens_reach_the_console_as_one_text(console: WebConsoleServer) -> None:
    listener = WebConsole(console.url, console.token)
    writer = Agent(
        role="Writer",
        goal="Write",
        llm=ScriptedChatModel(["Tides rise and fall twice a day."]),
    )
    ensemble = Ensemble(
        tasks=[Task(description="About tides", expected_output="a line", agent=writer)],
        listeners=[listener],
    )

    async def stream() -> list[str]:
        return [type(event).__name__ async for event in ensemble.astream()]

    kinds = asyncio.run(stream())
    assert kinds.count("TokenDelta") > 1  # word by word
    assert listener.flush(10)
    with api_client(console) as api:
        (run,) = api.get("/api/runs").json()["runs"]
        events = api.get(f"/api/runs/{run['run_id']}").json()["events"]
    streamed = [e["text"] for e in events if e["type"] == "TokenDelta"]
    assert streamed == ["Tides rise and fall twice a day."]
    assert run["status"] == "completed"
