"""Sessions through every door (issue 43): a served ensemble with a memory store continues a
caller's conversation (the MCP tool's ``session`` argument, the A2A context id), and another
caller sending the same session value starts its own. Over real HTTP for A2A and MCP, and over
stdio with a real ``agentensemble serve-mcp`` process."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from serve_helpers import AGENTENSEMBLE, crew_file, hardened_serving, model_env

from agentensemble import Agent, Ensemble, Task
from agentensemble.memory import SQLiteMemory
from agentensemble.serve import a2a_app
from agentensemble.serve._sessions import MAX_SESSION_CHARS
from agentensemble.serve.mcp_serving import mcp_http_app, mcp_server
from agentensemble.testing import FunctionChatModel, OpenAICompatibleServer

pytestmark = pytest.mark.anyio

WAIT = 60.0
URL = "http://127.0.0.1:8770/"
TOKENS = {"alice": "alice-token-long-enough", "bob": "bob-token-long-enough-too"}


def numbered_answers() -> FunctionChatModel:
    """A model answering "answer 1", "answer 2", ...: an earlier answer in a later request
    shows that the request carried the earlier exchange."""
    count = itertools.count(1)
    return FunctionChatModel(lambda messages, tools: f"answer {next(count)}")


def helper(model: FunctionChatModel, store: Any) -> Callable[[], Ensemble]:
    def build() -> Ensemble:
        agent = Agent(role="Helper", goal="Help", llm=model)
        task = Task(description="Answer {question}", expected_output="an answer", agent=agent)
        return Ensemble(tasks=[task], memory=store)

    return build


def shown(model: FunctionChatModel) -> str:
    """Everything the last model request showed the model."""
    return " | ".join(str(m.get("content")) for m in model.requests[-1].messages)


# -- A2A over HTTP: the context id --------------------------------------------------------


def a2a_send(base: str, who: str, question: str, context_id: str | None = None) -> Any:
    message: dict[str, Any] = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": question}],
    }
    if context_id is not None:
        message["contextId"] = context_id
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    headers = {"Authorization": f"Bearer {TOKENS[who]}", "A2A-Version": "1.0"}
    answer = httpx.post(base, json=body, headers=headers, timeout=WAIT)
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]["task"]


def test_a2a_a_context_id_continues_its_callers_conversation_only(tmp_path: Path) -> None:
    model = numbered_answers()
    store = SQLiteMemory(tmp_path / "memory.sqlite", embedder=None)
    app = a2a_app(helper(model, store), name="helper", description="helps", url=URL, token=TOKENS)
    with hardened_serving(app) as port:
        base = f"http://127.0.0.1:{port}/"
        first = a2a_send(base, "alice", "tides")
        assert first["status"]["state"] == "TASK_STATE_COMPLETED"
        assert first["artifacts"][0]["parts"][0]["text"] == "answer 1"
        context = first["contextId"]

        again = a2a_send(base, "alice", "and the moon?", context)
        assert again["contextId"] == context
        assert "Answer tides" in shown(model) and "answer 1" in shown(model)

        other = a2a_send(base, "bob", "tides?", context)  # the same context id, another caller
        assert other["status"]["state"] == "TASK_STATE_COMPLETED"
        assert "answer 1" not in shown(model) and "answer 2" not in shown(model)

        fresh = a2a_send(base, "alice", "something else")  # no context id: a new conversation
        assert fresh["contextId"] != context
        assert "answer 1" not in shown(model)


def test_a2a_a_context_id_that_cannot_be_a_session_is_rejected(tmp_path: Path) -> None:
    model = numbered_answers()
    store = SQLiteMemory(tmp_path / "memory.sqlite", embedder=None)
    app = a2a_app(helper(model, store), name="helper", description="helps", url=URL, token=TOKENS)
    with hardened_serving(app) as port:
        base = f"http://127.0.0.1:{port}/"
        long = a2a_send(base, "alice", "tides", "c" * (MAX_SESSION_CHARS + 1))
        control = a2a_send(base, "alice", "tides", "ctx\x1b[2J")
    for task, why in ((long, "at most"), (control, "control")):
        assert task["status"]["state"] == "TASK_STATE_REJECTED"
        assert why in task["status"]["message"]["parts"][0]["text"]
    assert model.requests == []  # refused before any model call


# -- MCP over HTTP: the session argument --------------------------------------------------


async def mcp_calls(url: str, who: str, *calls: dict[str, Any]) -> list[types.CallToolResult]:
    headers = {"Authorization": f"Bearer {TOKENS[who]}"}
    results = []
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for arguments in calls:
            results.append(await client.call_tool("helper", arguments))
    return results


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result.content
    return result.content[0].text  # type: ignore[union-attr]


async def test_mcp_http_a_session_continues_its_callers_conversation_only(
    tmp_path: Path,
) -> None:
    model = numbered_answers()
    store = SQLiteMemory(tmp_path / "memory.sqlite", embedder=None)
    app = mcp_http_app(mcp_server({"helper": helper(model, store)}), token=TOKENS)
    with hardened_serving(app, lifespan="on") as port, anyio.fail_after(WAIT):
        url = f"http://127.0.0.1:{port}/mcp"
        first, second = await mcp_calls(
            url,
            "alice",
            {"question": "tides", "session": "support-1"},
            {"question": "and the moon?", "session": "support-1"},
        )
        assert (text_of(first), text_of(second)) == ("answer 1", "answer 2")
        assert "Answer tides" in shown(model) and "answer 1" in shown(model)

        # another caller, the same session value: its own, empty conversation
        (other,) = await mcp_calls(url, "bob", {"question": "hello", "session": "support-1"})
        assert text_of(other) == "answer 3"
        assert "answer 1" not in shown(model) and "answer 2" not in shown(model)

        # alice, in a new MCP session (a new connection), continues her conversation
        (later,) = await mcp_calls(url, "alice", {"question": "more", "session": "support-1"})
        assert text_of(later) == "answer 4"
        assert "answer 2" in shown(model) and "answer 3" not in shown(model)


@pytest.mark.parametrize(
    ("session", "problem"),
    [
        ("", "must not be blank"),
        ("   ", "must not be blank"),
        ("s" * (MAX_SESSION_CHARS + 1), f"at most {MAX_SESSION_CHARS}"),
        ("a\nb", "control"),
        ("a\u202eb", "control, format"),
        (42, "must be a string"),
    ],
)
async def test_mcp_a_bad_session_is_an_error_result_before_any_model_call(
    tmp_path: Path, session: Any, problem: str
) -> None:
    model = numbered_answers()
    store = SQLiteMemory(tmp_path / "memory.sqlite", embedder=None)
    async with Client(mcp_server({"helper": helper(model, store)})) as client:
        result = await client.call_tool("helper", {"question": "q", "session": session})
    assert result.is_error
    assert problem in result.content[0].text  # type: ignore[union-attr]
    assert model.requests == []


async def test_mcp_the_session_argument_is_offered_only_with_a_memory_store(
    tmp_path: Path,
) -> None:
    model = numbered_answers()
    store = SQLiteMemory(tmp_path / "memory.sqlite", embedder=None)

    def without_memory() -> Ensemble:
        agent = Agent(role="Helper", goal="Help", llm=model)
        return Ensemble(tasks=[Task(description="Answer {question}", agent=agent)])

    server = mcp_server({"helper": helper(model, store), "plain": without_memory})
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        refused = await client.call_tool("plain", {"question": "q", "session": "s"})
    with_memory = tools["helper"].input_schema
    assert with_memory["properties"]["session"]["maxLength"] == MAX_SESSION_CHARS
    assert with_memory["required"] == ["question"]  # optional
    assert "session" not in tools["plain"].input_schema["properties"]
    assert refused.is_error and "unknown argument(s): 'session'" in refused.content[0].text  # type: ignore[union-attr]


# -- MCP over stdio: a real serve-mcp process ---------------------------------------------

MEMORY_CREW = """\
model: openai/test-model
memory: memory.sqlite
agents:
  helper:
    role: Helper
    goal: Help
tasks:
  answer:
    description: Answer {question}
    expected_output: An answer.
    agent: helper
"""


@pytest.mark.e2e
async def test_mcp_stdio_a_session_continues_the_conversation(tmp_path: Path) -> None:
    count = itertools.count(1)
    with OpenAICompatibleServer() as model_server:
        model_server.set_responder(lambda body: f"answer {next(count)}")
        crew = crew_file(tmp_path, MEMORY_CREW, name="helper.yaml")
        command, *args = AGENTENSEMBLE
        env = model_env(model_server.base_url)
        parameters = StdioServerParameters(
            command=command, args=[*args, "serve-mcp", str(crew)], env=env
        )
        with anyio.fail_after(WAIT):
            async with Client(parameters) as client:
                first = await client.call_tool("helper", {"question": "tides", "session": "s1"})
                second = await client.call_tool("helper", {"question": "moon", "session": "s1"})
                other = await client.call_tool("helper", {"question": "hi", "session": "s2"})
        requests = model_server.requests

    assert [text_of(r) for r in (first, second, other)] == ["answer 1", "answer 2", "answer 3"]

    def sent(request: dict[str, Any]) -> str:
        return " | ".join(str(m.get("content")) for m in request["messages"])

    assert "answer 1" in sent(requests[1]) and "Answer tides" in sent(requests[1])
    assert "answer 1" not in sent(requests[2]) and "answer 2" not in sent(requests[2])
