"""Provider errors worth reading, on recorded traffic: OpenRouter's upstream reason shown, and
Groq's ``tool_use_failed`` 400 sent back to the model as a bounded correction turn."""

from __future__ import annotations

from typing import Any

import pytest
from replay_server import model

from agentensemble import LLMError
from agentensemble.llm.litellm_model import MAX_TOOL_CORRECTIONS

pytestmark = pytest.mark.anyio

SPEC = {
    "type": "function",
    "function": {
        "name": "get_something_by_name",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": False,
        },
    },
}


@pytest.mark.parametrize("lane", ["auto", "litellm"])
async def test_an_openrouter_error_shows_the_upstream_reason(replay: Any, lane: str) -> None:
    server = replay("openrouter/errors", 0)
    name = "openrouter/google/gemini-2.0-flash-exp:free"
    if lane == "auto":  # the same endpoint as an OpenAI-compatible one (the openai lane)
        name = "openai/google/gemini-2.0-flash-exp:free"
    llm = model(name, server, suffix="/api/v1", lane=lane)

    with pytest.raises(LLMError) as caught:
        await llm.complete([{"role": "user", "content": "hi"}])

    message = str(caught.value)
    assert (
        "Provider returned error (upstream Google: google/gemini-2.0-flash-exp:free is " in message
    )
    assert "temporarily rate-limited upstream" in message
    assert caught.value.status_code == 429


async def test_a_malformed_tool_call_goes_back_to_the_model_once(replay: Any) -> None:
    server = replay("groq/tool_use_failed", 0, 1)
    llm = model("groq/openai/gpt-oss-120b", server, suffix="/openai/v1")
    history = [{"role": "user", "content": "call the tool with bad arguments, then good ones"}]

    response = await llm.complete(history, tools=[SPEC])

    assert [call.arguments for call in response.tool_calls] == ['{"name":"test"}']
    first, second = (request.body for request in server.requests)
    assert len(first["messages"]) == 1
    correction = second["messages"][-1]
    assert correction["role"] == "user"
    assert "did not match schema" in correction["content"]
    assert '"foo": "bar"' in correction["content"]  # the call the model wrote, shown to it
    assert len(history) == 1  # the caller's history is left as it was


async def test_corrections_are_bounded(replay: Any) -> None:
    server = replay("groq/tool_use_failed", *([0] * (MAX_TOOL_CORRECTIONS + 2)))
    llm = model("groq/openai/gpt-oss-120b", server, suffix="/openai/v1")

    with pytest.raises(LLMError, match="did not match schema"):
        await llm.complete([{"role": "user", "content": "x"}], tools=[SPEC])

    assert len(server.requests) == MAX_TOOL_CORRECTIONS + 1
