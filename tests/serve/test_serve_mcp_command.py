"""``agentensemble serve-mcp`` as a subprocess, called with the real ``mcp`` client over stdio
and streamable HTTP; the crew's model is the local OpenAI-compatible server."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from serve_helpers import AGENTENSEMBLE, KEY, crew_file, model_env, serving

from agentensemble.testing import OpenAICompatibleServer

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

WAIT = 60.0
TOKEN = "a-serve-token-of-some-length"


@pytest.fixture
def model_server() -> Any:
    with OpenAICompatibleServer() as server:
        yield server


def stdio(crew: Path, env: dict[str, str], *extra: str) -> StdioServerParameters:
    command, *args = AGENTENSEMBLE
    return StdioServerParameters(
        command=command, args=[*args, "serve-mcp", str(crew), *extra], env=env
    )


async def test_stdio_serves_the_crew_file_as_one_tool_named_after_its_stem(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    model_server.push_text("Fact one. Fact two. Fact three.")
    model_server.push_text("A paragraph about tides.")
    crew = crew_file(tmp_path)
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    with anyio.fail_after(WAIT):
        async with Client(stdio(crew, model_env(model_server.base_url))) as client:
            tools = (await client.list_tools()).tools
            result = await client.call_tool(
                "writer", {"topic": "tides"}, progress_callback=on_progress
            )
            missing = await client.call_tool("writer", {})

    assert [t.name for t in tools] == ["writer"]
    assert tools[0].input_schema["required"] == ["topic"]
    assert result.content == [types.TextContent(text="A paragraph about tides.")]
    assert progress[0] == "task 1/2 started: Research tides." and progress[-1] == "task 2/2 done"
    assert len(model_server.requests) == 2  # the missing argument made no model request
    assert missing.is_error and "missing argument(s): topic" in missing.content[0].text  # type: ignore[union-attr]


async def test_a_model_failure_is_an_error_result_without_the_key(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    for _ in range(6):  # every retry fails
        model_server.push_fault(401, body=f'{{"error": "bad key {KEY}"}}')
    crew = crew_file(tmp_path)
    with anyio.fail_after(WAIT):
        async with Client(stdio(crew, model_env(model_server.base_url))) as client:
            result = await client.call_tool("writer", {"topic": "tides"})
            still = await client.list_tools()
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("writer failed: ") and KEY not in text
    assert still.tools


async def test_streamable_http_at_mcp_with_a_bearer_token(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    model_server.push_text("Facts.")
    model_server.push_text("A paragraph about HTTP.")
    env = model_env(model_server.base_url, AGENTENSEMBLE_SERVE_TOKEN=TOKEN)
    with serving(["serve-mcp", str(crew_file(tmp_path)), "--http"], env) as base:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with anyio.fail_after(WAIT):
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                transport = streamable_http_client(f"{base}/mcp", http_client=http)
                async with Client(transport) as client:
                    result = await client.call_tool("writer", {"topic": "HTTP"})
        assert result.content == [types.TextContent(text="A paragraph about HTTP.")]
        async with httpx.AsyncClient(timeout=10) as raw:
            no_token = await raw.post(f"{base}/mcp", json={})
            wrong = await raw.post(f"{base}/mcp", json={}, headers={"Authorization": "Bearer x"})
            foreign = await raw.post(
                f"{base}/mcp", json={}, headers={**headers, "Host": "evil.example:80"}
            )
            big = await raw.post(f"{base}/mcp", content=b"x" * (2 * 1024 * 1024), headers=headers)
    assert (no_token.status_code, wrong.status_code) == (401, 401)
    assert TOKEN not in no_token.text
    assert foreign.status_code == 421
    assert big.status_code == 413


async def test_http_on_loopback_needs_no_token_but_refuses_a_foreign_host(
    tmp_path: Path, model_server: OpenAICompatibleServer
) -> None:
    model_server.push_text("Facts.")
    model_server.push_text("Plain.")
    with serving(["serve-mcp", str(crew_file(tmp_path)), "--http"], model_env("x")) as base:
        async with httpx.AsyncClient(timeout=10) as raw:
            rebinding = await raw.post(f"{base}/mcp", json={}, headers={"Host": "attacker.test"})
        assert rebinding.status_code == 421
        with anyio.fail_after(WAIT):
            async with Client(f"{base}/mcp") as client:
                listed = await client.list_tools()
        assert [t.name for t in listed.tools] == ["writer"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--http", "--host", "10.0.0.2"], "AGENTENSEMBLE_SERVE_TOKEN"),
        (["--http", "--host", "0.0.0.0"], "--allow-host NAME"),
        ([], "console review handler cannot work over stdio"),
    ],
)
def test_unsafe_setups_refuse_to_start(tmp_path: Path, args: list[str], message: str) -> None:
    text = "review: {policy: after_last_task, handler: console}\n" if not args else ""
    crew = crew_file(tmp_path, text + "model: openai/x\ntasks:\n  t:\n    description: Do {x}\n")
    done = subprocess.run(
        [*AGENTENSEMBLE, "serve-mcp", str(crew), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=model_env("http://127.0.0.1:9"),
    )
    assert done.returncode == 2
    assert message in done.stderr


def test_a_gated_tool_without_a_reviewer_refuses_to_start(tmp_path: Path) -> None:
    tools = tmp_path / "gated_tools.py"
    tools.write_text(
        "from agentensemble import tool\n\n"
        "@tool(requires_approval=True)\ndef publish(text: str) -> str:\n"
        '    """Publish."""\n    return "ok"\n'
    )
    crew = crew_file(
        tmp_path,
        "model: openai/x\ntasks:\n  t:\n    description: Do {x}\n"
        "    tools: [gated_tools:publish]\n",
    )
    done = subprocess.run(
        [*AGENTENSEMBLE, "serve-mcp", str(crew), "--model", "scripted"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=model_env("http://127.0.0.1:9"),
    )
    assert done.returncode == 2
    assert "publish" in done.stderr and "review" in done.stderr


REVIEWED = """\
model: openai/test-model
review: {policy: after_last_task, handler: mcp}
tasks:
  draft:
    description: Draft a note on {topic}.
"""


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 round trips; a mid-call request
async def test_review_mcp_asks_the_user_of_a_stdio_client(
    tmp_path: Path, model_server: OpenAICompatibleServer, mode: Any
) -> None:
    model_server.push_text("The draft note.")
    asked: list[str] = []

    async def user(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    crew = crew_file(tmp_path, REVIEWED, "note.yaml")
    with anyio.fail_after(WAIT):
        parameters = stdio(crew, model_env(model_server.base_url))
        async with Client(parameters, elicitation_callback=user, mode=mode) as client:
            approved = await client.call_tool("note", {"topic": "tides"})
        async with Client(parameters, mode=mode) as client:  # cannot be asked: fails closed
            model_server.push_text("Another draft.")
            refused = await client.call_tool("note", {"topic": "tides"})
    assert approved.content == [types.TextContent(text="The draft note.")]
    assert "The draft note." in asked[0]
    assert refused.is_error and "Another draft." not in refused.content[0].text  # type: ignore[union-attr]
