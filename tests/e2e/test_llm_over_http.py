"""LLM over real HTTP against the local OpenAI-compatible server.

The tool-call turn is the check that catches a litellm install without ``mcp``: in 1.106.2 every
request with ``tools=`` imports litellm's MCP gateway.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest
from openai_server import Fault, OpenAIServer, TextReply, ToolCallsReply

from agentensemble.errors import LLMError
from agentensemble.llm import LLM, RetryPolicy

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.usefixtures("model_lane")]

KEY = "sk-test"
FAST = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.005, jitter=0)
ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


def make_llm(server: OpenAIServer, **overrides: Any) -> LLM:
    settings: dict[str, Any] = {
        "api_base": server.base_url,
        "api_key": KEY,
        "retry_policy": FAST,
        "timeout": 10.0,
    }
    settings.update(overrides)
    return LLM(model="openai/test-model", **settings)


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


async def test_text_turn(openai_server: OpenAIServer) -> None:
    openai_server.push_text("Paris is the capital of France.", usage=(9, 7))
    response = await make_llm(openai_server).complete(user("Capital of France?"))

    assert response.content == "Paris is the capital of France."
    assert response.tool_calls == []
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (9, 7)
    assert response.usage.total_tokens == 16
    assert response.finish_reason == "stop"
    [request] = openai_server.requests
    assert request["model"] == "test-model"
    assert request["messages"] == user("Capital of France?")
    assert "tools" not in request
    assert openai_server.log[0].headers["authorization"] == f"Bearer {KEY}"


async def test_tool_call_turn_then_answer_from_tool_result(openai_server: OpenAIServer) -> None:
    def responder(request: dict[str, Any]) -> TextReply | ToolCallsReply:
        last = request["messages"][-1]
        if last["role"] == "tool":
            return TextReply(f"The sum is {last['content']}.")
        return ToolCallsReply((("add", '{"a": 2, "b": 40}'),))

    openai_server.set_responder(responder)
    llm = make_llm(openai_server)
    messages = user("What is 2 + 40?")

    first = await llm.complete(messages, tools=[ADD_TOOL])
    assert first.finish_reason == "tool_calls"
    [call] = first.tool_calls
    assert (call.name, call.arguments) == ("add", '{"a": 2, "b": 40}')
    args = json.loads(call.arguments)

    messages = [
        *messages,
        first.to_message(),
        {"role": "tool", "tool_call_id": call.id, "content": str(args["a"] + args["b"])},
    ]
    second = await llm.complete(messages, tools=[ADD_TOOL])
    assert second.content == "The sum is 42."

    sent = openai_server.requests
    assert len(sent) == 2
    assert sent[0]["tools"] == [ADD_TOOL]
    assert sent[1]["messages"][1]["tool_calls"][0]["id"] == call.id
    assert sent[1]["messages"][2] == {"role": "tool", "tool_call_id": call.id, "content": "42"}


async def test_429_then_success_is_retried(openai_server: OpenAIServer) -> None:
    openai_server.push_fault(429, retry_after=0)
    openai_server.push_text("ok")
    assert (await make_llm(openai_server).complete(user("hi"))).content == "ok"
    assert [entry.outcome for entry in openai_server.log] == ["fault:status:429", "text"]


async def test_retry_after_is_honoured_over_http(openai_server: OpenAIServer) -> None:
    openai_server.push_fault(429, retry_after=0.3)
    openai_server.push_text("ok")
    start = time.monotonic()
    await make_llm(openai_server).complete(user("hi"))
    assert time.monotonic() - start >= 0.29
    assert len(openai_server.requests) == 2


async def test_401_fails_fast(openai_server: OpenAIServer) -> None:
    openai_server.push_fault(401, body=json.dumps({"error": {"message": f"bad key {KEY}"}}))
    openai_server.push_text("never served")
    with pytest.raises(LLMError) as caught:
        await make_llm(openai_server, api_key="sk-live-0123456789abcdef").complete(user("hi"))
    assert caught.value.status_code == 401
    assert caught.value.attempts == 1
    assert len(openai_server.requests) == 1
    assert openai_server.pending == 1
    assert "0123456789abcdef" not in str(caught.value)


@pytest.mark.parametrize("kind", ["drop", "truncated", "non_json"])
async def test_broken_connection_or_body_is_retried(openai_server: OpenAIServer, kind: Any) -> None:
    openai_server.push_fault(kind=kind)
    openai_server.push_text("second time lucky")
    response = await make_llm(openai_server).complete(user("hi"))
    assert response.content == "second time lucky"
    assert len(openai_server.requests) == 2


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_server_errors_exhaust_the_policy(openai_server: OpenAIServer, status: int) -> None:
    for _ in range(3):
        openai_server.push_fault(status)
    with pytest.raises(LLMError) as caught:
        await make_llm(openai_server).complete(user("hi"))
    assert caught.value.status_code == status
    assert caught.value.attempts == 3
    assert len(openai_server.requests) == 3


async def test_slow_answer_times_out_and_is_retried(openai_server: OpenAIServer) -> None:
    openai_server.push_fault(kind="hang", delay=60)
    openai_server.push_text("fast enough")
    start = time.monotonic()
    response = await make_llm(openai_server, timeout=2.0).complete(user("hi"))
    assert response.content == "fast enough"
    assert time.monotonic() - start < 20  # cut at 2 s and retried; the hang lasts 60 s


async def test_chaos_faults_do_not_consume_the_script(openai_server: OpenAIServer) -> None:
    openai_server.set_chaos(0.4, [Fault.http(503), Fault.http(429), Fault(kind="drop")], seed=7)
    for i in range(8):
        openai_server.push_text(f"answer {i}")
    llm = make_llm(openai_server, retry_policy=FAST.model_copy(update={"max_attempts": 10}))

    answers = [(await llm.complete(user(f"q{i}"))).content for i in range(8)]

    assert answers == [f"answer {i}" for i in range(8)]
    assert openai_server.faults_injected > 0
    assert len(openai_server.requests) == 8 + openai_server.faults_injected
    assert openai_server.pending == 0


async def test_cancellation_is_not_retried(openai_server: OpenAIServer) -> None:
    openai_server.push_fault(kind="hang", delay=60)
    openai_server.push_text("never needed")
    start = time.monotonic()
    with anyio.move_on_after(0.3) as scope:
        await make_llm(openai_server).complete(user("hi"))
    assert scope.cancelled_caught
    assert time.monotonic() - start < 20  # cancelled at 0.3 s, not after the 60 s hang
    assert len(openai_server.requests) == 1
