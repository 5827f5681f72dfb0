"""The A2A agent against hostile callers (issue 38): a web page posting to it, one caller
reading or cancelling another's tasks, tasks piling up, a body built to freeze the parser."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from typing import Any

import httpx
import pytest
from serve_helpers import hardened_serving

from agentensemble import Agent, Ensemble, Task
from agentensemble.logging import register_secret
from agentensemble.serve import a2a_app
from agentensemble.serve._hardened import Limits
from agentensemble.serve.a2a_serving import TaskLimits
from agentensemble.testing import FunctionChatModel, ScriptedChatModel

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1:8769/"
TOKENS = {"alice": "alice-token-long-enough", "bob": "bob-token-long-enough-too"}


def crew() -> Ensemble:
    """One task needing one text input ``topic``; the model answers at once."""
    agent = Agent(role="Writer", goal="Write", llm=ScriptedChatModel(["a line"] * 50))
    return Ensemble(
        tasks=[Task(description="Write about {topic}", expected_output="a line", agent=agent)]
    )


def app(**settings: Any) -> Any:
    return a2a_app(crew, name="writer", description="writes", url=URL, **settings)


def client(served: Any, who: str | None = None) -> httpx.AsyncClient:
    headers = {"A2A-Version": "1.0"}
    if who is not None:
        headers["Authorization"] = f"Bearer {TOKENS[who]}"
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=served), base_url=URL.rstrip("/"), headers=headers
    )


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def send(text: str) -> dict[str, Any]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    return rpc("SendMessage", {"message": message})


async def started(http: httpx.AsyncClient, text: str = "tides") -> str:
    answer = await http.post("/", json=send(text))
    assert answer.status_code == 200, answer.text
    task = answer.json()["result"]["task"]
    return str(task["id"])


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Content-Type": "text/plain"}, 415),  # a page's "simple request": no preflight
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
        ({"Content-Type": "application/json", "Origin": "http://evil.example"}, 403),
        ({"Content-Type": "application/json", "Origin": "http://127.0.0.1:9999"}, 403),
        ({"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403),
    ],
)
async def test_a_cross_site_request_never_reaches_the_crew(
    headers: dict[str, str], status: int
) -> None:
    async with client(app()) as http:
        answer = await http.post("/", content=json.dumps(send("tides")), headers=headers)
    assert answer.status_code == status
    assert "result" not in answer.text


async def test_the_agents_own_origin_may_post() -> None:
    async with client(app()) as http:
        answer = await http.post(
            "/", json=send("tides"), headers={"Origin": "http://127.0.0.1:8769"}
        )
    assert answer.status_code == 200 and "result" in answer.json()


async def test_a_caller_sees_and_cancels_only_its_own_tasks() -> None:
    served = app(token=TOKENS)
    async with client(served, "alice") as alice, client(served, "bob") as bob:
        mine = await started(alice)
        own = (await alice.post("/", json=rpc("GetTask", {"id": mine}))).json()
        peek = (await bob.post("/", json=rpc("GetTask", {"id": mine}))).json()
        cancel = (await bob.post("/", json=rpc("CancelTask", {"id": mine}))).json()
        listed = [(await who.post("/", json=rpc("ListTasks", {}))).json() for who in (alice, bob)]
    assert own["result"]["id"] == mine
    assert "result" not in peek and "not found" in peek["error"]["message"].lower()
    assert "result" not in cancel and "not found" in cancel["error"]["message"].lower()
    for answer in listed:  # not served: it listed every caller's inputs and results
        assert "result" not in answer and "ListTasks is not served" in answer["error"]["message"]


async def test_callers_without_a_token_are_told_apart_by_address() -> None:
    served = app()

    def at(address: str) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=served, client=(address, 5000))
        return httpx.AsyncClient(
            transport=transport, base_url=URL.rstrip("/"), headers={"A2A-Version": "1.0"}
        )

    async with at("10.0.0.1") as one, at("10.0.0.2") as two:
        task = await started(one)
        peek = (await two.post("/", json=rpc("GetTask", {"id": task}))).json()
        own = (await one.post("/", json=rpc("GetTask", {"id": task}))).json()
    assert "error" in peek and own["result"]["id"] == task


async def test_finished_tasks_are_dropped_oldest_first_past_the_cap() -> None:
    served = app(task_limits=TaskLimits(max_tasks=3))
    async with client(served) as http:
        ids = [await started(http, f"topic {n}") for n in range(6)]
        found = [
            "result" in (await http.post("/", json=rpc("GetTask", {"id": task}))).json()
            for task in ids
        ]
    assert found == [False, False, False, True, True, True]


async def test_finished_tasks_expire_after_their_time_to_live() -> None:
    served = app(task_limits=TaskLimits(finished_task_ttl=0.05))
    async with client(served) as http:
        first = await started(http)
        deadline = time.monotonic() + 10
        while True:  # the next save prunes: wait for the first task to be past its TTL
            second = await started(http)
            gone = "error" in (await http.post("/", json=rpc("GetTask", {"id": first}))).json()
            if gone or time.monotonic() > deadline:
                break
        kept = (await http.post("/", json=rpc("GetTask", {"id": second}))).json()
    assert gone
    assert "result" in kept or "error" in kept  # the newest may itself have expired by now


@pytest.mark.parametrize(
    ("body", "status"),
    [
        # 250,000 empty lists (750 kB) held the SDK's protobuf parser 7-11 s
        (
            '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x","l":['
            + ",".join(["[]"] * 250_000)
            + "]}}",
            413,
        ),
        ("[" * 5_000 + "]" * 5_000, 400),  # nested past the bound
        ("{not json", 400),
    ],
)
async def test_a_body_built_to_freeze_the_parser_is_refused_before_it(
    body: str, status: int
) -> None:
    async with client(app()) as http:
        answer = await http.post("/", content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == status, answer.text


def answering_with(answer: Any, **settings: Any) -> Any:
    """An A2A agent for ``TOKENS``' callers whose model answers with ``answer`` (``settings``:
    ``a2a_app``'s, over these defaults)."""

    def waiting() -> Ensemble:
        agent = Agent(role="Writer", goal="Write", llm=FunctionChatModel(answer))
        task = Task(description="Write about {topic}", expected_output="a line", agent=agent)
        return Ensemble(tasks=[task])

    defaults = {"name": "writer", "description": "writes", "url": URL, "token": TOKENS}
    return a2a_app(waiting, **{**defaults, **settings})


async def test_a_caller_runs_a_bounded_number_of_tasks_at_once() -> None:
    release = asyncio.Event()

    async def answer(messages: Any, tools: Any) -> str:
        await release.wait()
        return "a line"

    served = answering_with(answer, task_limits=TaskLimits(max_running_per_caller=1))

    def at_once(text: str) -> dict[str, Any]:
        request = send(text)
        request["params"]["configuration"] = {"returnImmediately": True}
        return request

    async with client(served, "alice") as alice, client(served, "bob") as bob:
        first = (await alice.post("/", json=at_once("one"))).json()
        second = (await alice.post("/", json=at_once("two"))).json()
        other = (await bob.post("/", json=at_once("three"))).json()  # bob has his own share
        release.set()
    assert "task" in first["result"]
    assert "result" not in second and "already run 1 tasks" in second["error"]["message"]
    assert "task" in other["result"]


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
async def test_requests_sent_together_cannot_pass_the_running_cap_at_once(method: str) -> None:
    """Each request was checked before any of them had saved its task: 20 sent together all
    started, whatever the cap. Now a place is taken when a request is admitted."""
    release = asyncio.Event()
    calls: list[int] = []

    async def answer(messages: Any, tools: Any) -> str:
        calls.append(1)
        if len(calls) >= 2:  # the two the cap lets in have reached the model
            release.set()
        await release.wait()
        return "a line"

    served = answering_with(answer, task_limits=TaskLimits(max_running_per_caller=2))

    def at_once(text: str) -> dict[str, Any]:
        request = send(text)
        request["method"] = method
        request["params"]["configuration"] = {"returnImmediately": True}
        return request

    async def first_event(http: httpx.AsyncClient, text: str) -> str:
        async with http.stream("POST", "/", json=at_once(text)) as answer:
            async for line in answer.aiter_lines():
                if line.strip():
                    return line  # a JSON answer, or a stream's first event
        return ""

    async with client(served, "alice") as alice:  # (a stream is read whole once released)
        answers = await asyncio.gather(*(first_event(alice, f"topic {n}") for n in range(20)))
    started_ = [answer for answer in answers if '"result"' in answer]
    refused = [answer for answer in answers if "you already run 2 tasks" in answer]
    assert len(started_) == 2 and len(refused) == 18


async def test_a_refused_or_finished_request_gives_its_place_back() -> None:
    served = app(task_limits=TaskLimits(max_running_per_caller=1))
    async with client(served) as http:
        for n in range(4):  # one at a time: each finishes (or is refused) and frees its place
            bad = (await http.post("/", json=rpc("SendMessage", {"message": {}}))).json()
            assert "error" in bad
            await started(http, f"topic {n}")


async def test_one_caller_cannot_hold_every_connection_with_streams() -> None:
    """``SubscribeToTask`` of one's own running task, again and again: each stream held a
    connection, so one caller held all of them and every other caller got 503. Now a caller
    holds at most ``max_streams_per_caller`` streams; past that it is told so at once."""
    release = threading.Event()

    async def answer(messages: Any, tools: Any) -> str:
        while not release.is_set():  # the server's loop runs in another thread
            await asyncio.sleep(0.01)
        return "a line"

    served = answering_with(
        answer,
        url="http://127.0.0.1:9/",
        allowed_hosts=[],
        limits=Limits(max_connections=10),
        task_limits=TaskLimits(max_streams_per_caller=3),
    )
    alice = {"Authorization": f"Bearer {TOKENS['alice']}", "A2A-Version": "1.0"}
    bob = {"Authorization": f"Bearer {TOKENS['bob']}", "A2A-Version": "1.0"}
    with hardened_serving(served, lifespan="on") as port:
        base = f"http://127.0.0.1:{port}"
        async with (
            contextlib.AsyncExitStack() as held,
            httpx.AsyncClient(base_url=base, timeout=30, headers=alice) as http,
        ):
            request = send("tides")
            request["params"]["configuration"] = {"returnImmediately": True}
            task = (await http.post("/", json=request)).json()["result"]["task"]["id"]
            firsts = []
            for _ in range(10):  # as many as the server has connections
                stream = await held.enter_async_context(
                    http.stream("POST", "/", json=rpc("SubscribeToTask", {"id": task}))
                )
                lines = stream.aiter_lines()
                held.push_async_callback(lines.aclose)
                first = await anext(lines)
                firsts.append(first)
                if "error" in first:
                    await stream.aclose()  # refused: its connection is free again
            async with httpx.AsyncClient(base_url=base, timeout=30, headers=bob) as other:
                answer_ = await other.post("/", json=rpc("GetTask", {"id": "unknown"}))
            release.set()
    streaming = [first for first in firsts if '"result"' in first]
    refused = [first for first in firsts if "you already have 3 streams open" in first]
    assert len(streaming) == 3 and len(refused) == 7
    assert answer_.status_code == 200  # another caller still gets in


async def test_the_card_served_without_a_token_shows_no_registered_secret() -> None:
    """The card is open to anyone (no token): a registered secret in a task's description,
    expected output or agent's role went out as it was, one registered after the agent started
    too."""
    early, late = "sk-card-secret-early-123456", "sk-card-secret-late-654321"
    register_secret(early)

    def telling() -> Ensemble:
        agent = Agent(role=f"Writer {early}", goal="W", llm=ScriptedChatModel(["x"]))
        task = Task(
            description=f"Write about {{topic}} with {early} and {late}",
            expected_output=f"a line for {late}",
            agent=agent,
        )
        return Ensemble(tasks=[task])

    served = a2a_app(telling, name="writer", description="writes", url=URL, token=TOKENS)
    register_secret(late)  # e.g. a key first read once the agent is up
    async with client(served) as http:  # no token: the card is open
        card = await http.get("/.well-known/agent-card.json")
    assert card.status_code == 200 and "Write about {topic}" in card.text
    assert early not in card.text and late not in card.text
