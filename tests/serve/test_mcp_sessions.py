"""MCP over HTTP against a caller hoarding sessions (issue 38): with the SDK's defaults one local
caller opened 10,000 idle sessions in ~30 s and every new client got 503 for half an hour.
Now a caller holds a bounded share, sessions expire when idle, and a closed one frees its place.
A real uvicorn server on 127.0.0.1 through the hardened setup."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
from serve_helpers import hardened_serving

from agentensemble import Agent, Ensemble, Task
from agentensemble.serve.mcp_serving import SessionLimits, mcp_http_app, mcp_server
from agentensemble.testing import FunctionChatModel, ScriptedChatModel

WAIT = 30.0
TOKENS = {"alice": "alice-token-long-enough", "bob": "bob-token-long-enough-too"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "hoarder", "version": "1"},
    },
}


def crew() -> Ensemble:
    agent = Agent(role="W", goal="W", llm=ScriptedChatModel(["x"] * 5))
    return Ensemble(
        tasks=[Task(description="Write about {topic}", expected_output="x", agent=agent)]
    )


@contextmanager
def serving(sessions: SessionLimits) -> Iterator[str]:
    app = mcp_http_app(mcp_server({"writer": crew}), token=TOKENS, sessions=sessions)
    with hardened_serving(app, lifespan="on") as port:
        yield f"http://127.0.0.1:{port}/mcp"


def open_session(url: str, who: str) -> httpx.Response:
    headers = {
        "Authorization": f"Bearer {TOKENS[who]}",
        "Accept": "application/json, text/event-stream",
    }
    return httpx.post(url, json=INITIALIZE, headers=headers, timeout=WAIT)


def close_session(url: str, who: str, session: str) -> Any:
    headers = {"Authorization": f"Bearer {TOKENS[who]}", "Mcp-Session-Id": session}
    return httpx.delete(url, headers=headers, timeout=WAIT)


def test_one_caller_cannot_take_every_session() -> None:
    with serving(SessionLimits(max_sessions_per_caller=3, max_sessions=10)) as url:
        mine = [open_session(url, "alice") for _ in range(3)]
        hoarded = open_session(url, "alice")
        other = open_session(url, "bob")  # another caller still gets in
        assert [answer.status_code for answer in mine] == [200, 200, 200]
        assert hoarded.status_code == 429 and "open MCP sessions" in hoarded.text
        assert other.status_code == 200
        stolen = close_session(url, "bob", mine[1].headers["mcp-session-id"])
        assert stolen.status_code == 404  # a session is its opener's
        closed = close_session(url, "alice", mine[0].headers["mcp-session-id"])
        assert closed.status_code in (200, 204)
        assert open_session(url, "alice").status_code == 200  # a closed one frees its place


def test_idle_sessions_expire() -> None:
    with serving(SessionLimits(max_sessions_per_caller=1, idle_seconds=0.5)) as url:
        first = open_session(url, "alice")
        assert first.status_code == 200
        deadline = time.monotonic() + WAIT
        again = open_session(url, "alice")
        while again.status_code == 429 and time.monotonic() < deadline:
            time.sleep(0.1)  # polling the condition: the idle session is forgotten
            again = open_session(url, "alice")
        assert again.status_code == 200
        stale = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={
                "Authorization": f"Bearer {TOKENS['alice']}",
                "Accept": "application/json, text/event-stream",
                "Mcp-Session-Id": first.headers["mcp-session-id"],
                "Mcp-Protocol-Version": "2025-06-18",
            },
            timeout=WAIT,
        )
        assert stale.status_code == 404  # the SDK closed it too


def test_sessions_opened_together_cannot_pass_a_callers_share() -> None:
    """Twenty initializes sent at once were each checked before any session id came back: all
    ten places of the server went to one caller and every other client got 503."""

    async def together(url: str) -> list[httpx.Response]:
        headers = {
            "Authorization": f"Bearer {TOKENS['alice']}",
            "Accept": "application/json, text/event-stream",
        }
        async with httpx.AsyncClient(timeout=WAIT) as http:
            return await asyncio.gather(
                *(http.post(url, json=INITIALIZE, headers=headers) for _ in range(20))
            )

    with serving(SessionLimits(max_sessions_per_caller=3, max_sessions=10)) as url:
        answers = asyncio.run(together(url))
        other = open_session(url, "bob")
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200] * 3 + [429] * 17
    assert other.status_code == 200  # another caller still gets in


def test_a_session_busy_with_a_long_call_is_not_idle() -> None:
    """A call longer than ``idle_seconds``: the session's place and owner were forgotten while
    the SDK (idle only with no request in flight) kept it, so its caller opened more than its
    share and another caller's request with its id was let in."""
    started = threading.Event()
    release = threading.Event()

    async def answer(messages: Any, tools: Any) -> str:
        started.set()
        while not release.is_set():  # the server's loop runs in another thread
            await asyncio.sleep(0.01)
        return "x"

    def slow() -> Ensemble:
        agent = Agent(role="W", goal="W", llm=FunctionChatModel(answer))
        return Ensemble(
            tasks=[Task(description="Write about {topic}", expected_output="x", agent=agent)]
        )

    idle = 0.3
    app = mcp_http_app(
        mcp_server({"writer": slow}),
        token=TOKENS,
        sessions=SessionLimits(max_sessions_per_caller=1, idle_seconds=idle),
    )
    with hardened_serving(app, lifespan="on") as port, ThreadPoolExecutor(1) as pool:
        url = f"http://127.0.0.1:{port}/mcp"
        session = open_session(url, "alice").headers["mcp-session-id"]
        headers = {
            "Authorization": f"Bearer {TOKENS['alice']}",
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": session,
            "Mcp-Protocol-Version": "2025-06-18",
        }
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        httpx.post(url, json=initialized, headers=headers, timeout=WAIT)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "writer", "arguments": {"topic": "x"}},
        }
        busy = pool.submit(httpx.post, url, json=call, headers=headers, timeout=WAIT)
        assert started.wait(WAIT)
        shares = []
        deadline = time.monotonic() + idle * 5  # well past the idle time, the call still busy
        while time.monotonic() < deadline:
            shares.append(open_session(url, "alice").status_code)
        peek = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            headers={**headers, "Authorization": f"Bearer {TOKENS['bob']}"},
            timeout=WAIT,
        )
        release.set()
        finished = busy.result(timeout=WAIT)
    assert set(shares) == {429}  # the busy session still holds alice's one place
    assert peek.status_code == 404  # and is still hers
    assert finished.status_code == 200 and '"result"' in finished.text
