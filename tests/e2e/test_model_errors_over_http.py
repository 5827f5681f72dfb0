"""Model-layer errors over real HTTP: say what is wrong, retry only what may recover, no lies.

A refused connection is retried per the policy and then named (host, port, api_base), never as
"HTTP 500"; a missing key is a configuration error before any request; text that cannot be
encoded is made sendable instead of failing four times; a key taken from the environment and
echoed by the provider never shows.
"""

from __future__ import annotations

import socket
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from openai_server import OpenAIServer, TextReply, ToolCallsReply

from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task, TaskExecutionError, tool
from agentensemble.errors import ConfigurationError, LLMError

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.usefixtures("model_lane")]

FAST = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.005, jitter=0)
ENV_KEY = "sk-env-9f3b2c7d1e5a4b6c8d0e2f4a6b8c0d2e"


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port on 127.0.0.1 that is bound but not listening: connections are refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def chain_text(error: BaseException) -> str:
    """Every message in the exception chain and the traceback Python would print."""
    parts = ["".join(traceback.format_exception(error))]
    current: BaseException | None = error
    while current is not None:
        parts += [str(current), repr(current), str(getattr(current, "body", ""))]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


async def test_a_refused_connection_is_retried_then_named_without_an_http_status(
    refusing_port: int,
) -> None:
    api_base = f"http://127.0.0.1:{refusing_port}/v1"
    llm = LLM("openai/test-model", api_base=api_base, api_key="sk-test", retry_policy=FAST)

    with pytest.raises(LLMError) as caught:
        await llm.complete(user("hi"))

    text = str(caught.value)
    assert caught.value.attempts == 3  # it may come back: retried per the policy
    assert caught.value.status_code is None
    assert f"connection refused by 127.0.0.1:{refusing_port}" in text
    assert f"api_base {api_base}" in text
    assert "HTTP" not in text and "InternalServerError" not in text


async def test_a_missing_key_is_a_configuration_error_before_any_request(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = LLM("openai/test-model", api_base=openai_server.base_url, retry_policy=FAST)

    with pytest.raises(ConfigurationError, match="set OPENAI_API_KEY in the environment"):
        await llm.complete(user("hi"))
    assert openai_server.arrivals == []


async def test_unencodable_text_is_sent_with_replacement_characters(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_text("ok")
    llm = LLM("openai/test-model", api_base=openai_server.base_url, api_key="sk-test")
    spec = {
        "type": "function",
        "function": {"name": "ls", "description": "Lists \udcff files", "parameters": {}},
    }
    messages = [
        *user("list"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "report_\udcff.txt"},
    ]

    response = await llm.complete(messages, tools=[spec])

    assert response.content == "ok"
    [request] = openai_server.requests  # one request, no retries
    assert request["messages"][2]["content"] == "report_\ufffd.txt"
    assert request["tools"][0]["function"]["description"] == "Lists \ufffd files"


def test_a_file_name_from_listdir_in_a_tool_output_does_not_fail_the_run(
    openai_server: OpenAIServer,
) -> None:
    @tool
    def list_files() -> str:
        """List the files here."""
        return "report_\udcff.txt"  # what os.listdir gives for an undecodable byte

    def model(request: dict[str, Any]) -> TextReply | ToolCallsReply:
        last = request["messages"][-1]
        if last["role"] == "tool":
            return TextReply(f"Found {last['content']}")
        return ToolCallsReply((("list_files", "{}"),))

    openai_server.set_responder(model)
    llm = LLM("openai/test-model", api_base=openai_server.base_url, api_key="sk-test")
    agent = Agent(role="Clerk", goal="List files", tools=[list_files], llm=llm)

    result = Ensemble(tasks=[Task(description="List the files", agent=agent)]).run()

    assert result.raw == "Found report_\ufffd.txt"
    assert len(openai_server.arrivals) == 2


def test_a_key_from_the_environment_echoed_by_the_provider_never_shows(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    openai_server.push_fault(
        401, body='{"error": {"message": "Incorrect API key provided: ' + ENV_KEY + '"}}'
    )
    llm = LLM("openai/test-model", api_base=openai_server.base_url, retry_policy=FAST)
    agent = Agent(role="Analyst", goal="Report", llm=llm)

    with pytest.raises(TaskExecutionError) as info:
        Ensemble(tasks=[Task(description="Report", agent=agent)]).run()

    assert openai_server.log[0].headers["authorization"] == f"Bearer {ENV_KEY}"  # really used
    assert "401" in str(info.value)
    text = chain_text(info.value)
    assert "Incorrect API key provided: ***" in text
    assert ENV_KEY[3:15] not in text
