"""Attacks on the secrets an MCP server is given: its URL's token, its command line, its ``env``
values. None may reach the model's text, the logs, the trace, an error or the CLI's output. And
the server's process group ends with the session, even when its leader exits politely."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import SERVER, free_port, process_alive, serve

from agentensemble import Agent, Ensemble, Task
from agentensemble.mcp import MCPServerError, MCPServerHTTP, MCPServerStdio
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call

pytestmark = pytest.mark.anyio

PATH_TOKEN = "tok3nInThePath0123456789"
QUERY_TOKEN = "q-s3cret-query-token-value"


def one_task(server: object, model: object) -> Ensemble:
    agent = Agent(role="Calculator", goal="Use the tools", tools=[server], llm=model)
    return Ensemble(tasks=[Task(description="Compute", agent=agent)])  # type: ignore[arg-type]


async def test_an_http_url_token_is_not_in_the_error_of_a_server_that_cannot_start() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1/{PATH_TOKEN}/mcp?api_key={QUERY_TOKEN}"
    server = MCPServerHTTP(url, startup_timeout=20)
    with pytest.raises(MCPServerError) as caught:
        await one_task(server, ScriptedChatModel(["never"])).arun()
    message = str(caught.value)
    assert "could not start" in message and "/v1/***/mcp" in message
    for shown in (message, repr(server), server.describe()):
        assert PATH_TOKEN not in shown and QUERY_TOKEN not in shown


async def test_an_http_url_token_never_reaches_the_model_the_logs_or_the_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    servers = serve("http")
    url = next(servers) + f"?token={QUERY_TOKEN}"  # as hosted MCP services issue them
    stopped = False

    def model_fn(messages: list[dict[str, object]], tools: object) -> object:
        nonlocal stopped
        if messages[-1].get("role") != "tool":
            return tool_call("add", {"a": 1, "b": 2})
        if not stopped:
            stopped = True
            next(servers, None)  # the server goes away: the failure names the server
            return tool_call("add", {"a": 3, "b": 4})
        return "done"

    model = FunctionChatModel(model_fn)  # type: ignore[arg-type]
    with caplog.at_level(logging.DEBUG):
        output = await asyncio.wait_for(
            one_task(MCPServerHTTP(url, timeout=20), model).arun(), timeout=120
        )
    failure = str(model.requests[2].tool_results[0])
    assert "failed to answer the call to 'add'" in failure
    logs = caplog.text + " ".join(str(record.__dict__) for record in caplog.records)
    assert "HTTP Request" in logs  # httpx logged its requests, URL included...
    trace = json.dumps(output.trace.model_dump(mode="json")) if output.trace else ""
    for leaked in (failure, logs, trace, output.model_dump_json()):
        assert QUERY_TOKEN not in leaked  # ...with the token redacted


async def test_a_password_in_a_stdio_command_line_is_not_in_errors_or_the_repr() -> None:
    password = "hunter2-db-password"
    database = f"postgresql://app:{password}@db/prod"
    args = [str(SERVER), "crash", database, "--token", "tk-0a9b8c7d6e"]
    server = MCPServerStdio(sys.executable, args)
    with pytest.raises(MCPServerError) as caught:
        await one_task(server, ScriptedChatModel(["never"])).arun()
    message = str(caught.value)
    assert "test server: refusing to start" in message
    assert "postgresql://db/***" in message  # shown as safe_url shows a credential URL
    for shown in (message, repr(server)):
        assert password not in shown and "tk-0a9b8c7d6e" not in shown


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DATABASE_URI", "postgresql://app:pw-9f8e7d6c@db.internal/app"),  # shaped like one
        ("MODE_SETTING", "plain-looking-but-private"),  # any value: the name proves nothing
    ],
)
async def test_every_env_value_of_a_stdio_server_is_a_secret(name: str, value: str) -> None:
    server = MCPServerStdio(sys.executable, [str(SERVER)], env={name: value})
    model = ScriptedChatModel([tool_call("die"), "it died"])
    output = await one_task(server, model).arun()
    (died,) = model.requests[1].tool_results
    assert f"config {name}=" in died  # the server's stderr is quoted to the model...
    assert value not in died  # ...without the value it was given
    assert value not in output.model_dump_json()


async def test_the_server_s_process_group_ends_with_the_session_after_a_polite_exit(
    tmp_path: Path,
) -> None:
    child_file = tmp_path / "child.pid"
    server = MCPServerStdio(
        sys.executable, [str(SERVER)], env={"MCP_TEST_CHILD_PID_FILE": str(child_file)}
    )
    model = ScriptedChatModel([tool_call("add", {"a": 1, "b": 1}), "2"])
    await one_task(server, model).arun()
    child = int(child_file.read_text())
    deadline = time.monotonic() + 20
    while process_alive(child) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not process_alive(child)
