"""LLM against a respx-mocked provider: parsing, retries, fast failures, no leaked keys."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from agentensemble.errors import LLMError
from agentensemble.llm import LLM, ChatModel, RetryPolicy
from agentensemble.llm.litellm_model import to_chat_response
from agentensemble.outputs import TokenUsage

OPENAI_URL = "https://api.openai.com/v1/chat/completions"
KEY = "sk-test-0123456789abcdefghij"
FAST = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.005, jitter=0)
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
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


def completion(
    content: str | None = "Hello!",
    tool_calls: list[dict[str, Any]] | None = None,
    usage: tuple[int, int] = (12, 3),
    finish_reason: str = "stop",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        },
    }


def error(status: int, message: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"error": {"message": message, "type": "error", "param": None, "code": str(status)}}
    return httpx.Response(status, json=body, headers=headers)


def llm(**overrides: Any) -> LLM:
    settings: dict[str, Any] = {"api_key": KEY, "retry_policy": FAST, "timeout": 10.0}
    settings.update(overrides)
    return LLM("openai/gpt-4o-mini", **settings)


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    """Every HTTP request is mocked; one unmocked request fails the test. respx sees httpx only:
    the openai lane is put on it with litellm's own switch."""
    monkeypatch.setenv("DISABLE_AIOHTTP_TRANSPORT", "true")
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


def sent(route: respx.Route, index: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(route.calls[index].request.content)
    return body


# --------------------------------------------------------------------------- answers


@pytest.mark.anyio
async def test_text_answer(provider: respx.MockRouter) -> None:
    route = provider.post(OPENAI_URL).mock(return_value=httpx.Response(200, json=completion()))
    model = llm(temperature=0.2, max_tokens=50)
    assert isinstance(model, ChatModel)

    response = await model.complete(MESSAGES)

    assert response.content == "Hello!"
    assert response.tool_calls == []
    assert response.usage == TokenUsage(prompt_tokens=12, completion_tokens=3, total_tokens=15)
    assert response.finish_reason == "stop"
    assert response.model == "gpt-4o-mini-2024-07-18"
    assert route.call_count == 1
    body = sent(route)
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == MESSAGES
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50
    assert "tools" not in body
    assert route.calls[0].request.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.anyio
async def test_tool_call_answer_is_parsed_exactly(provider: respx.MockRouter) -> None:
    odd_json = '{"a": 2,   "b":40 }'  # spacing kept: arguments are the model's exact text
    calls = [
        {"id": "call_A", "type": "function", "function": {"name": "add", "arguments": odd_json}},
        {"id": "call_B", "type": "function", "function": {"name": "add", "arguments": "{}"}},
    ]
    body = completion(content=None, tool_calls=calls, finish_reason="tool_calls")
    route = provider.post(OPENAI_URL).mock(return_value=httpx.Response(200, json=body))

    response = await llm().complete(MESSAGES, tools=[ADD_TOOL])

    assert response.content is None
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_A", "add", odd_json),
        ("call_B", "add", "{}"),
    ]
    assert response.finish_reason == "tool_calls"
    assert sent(route)["tools"] == [ADD_TOOL]
    assert response.to_message()["tool_calls"][0]["function"]["arguments"] == odd_json


@pytest.mark.anyio
async def test_empty_tool_list_sends_no_tools(provider: respx.MockRouter) -> None:
    route = provider.post(OPENAI_URL).mock(return_value=httpx.Response(200, json=completion()))
    await llm().complete(MESSAGES, tools=[])
    assert "tools" not in sent(route)


@pytest.mark.anyio
async def test_custom_api_base(provider: respx.MockRouter) -> None:
    route = provider.post("http://llm.internal:8080/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("from the gateway"))
    )
    model = LLM("openai/local-model", api_base="http://llm.internal:8080/v1", api_key="sk-x1234")
    response = await model.complete(MESSAGES)
    assert response.content == "from the gateway"
    assert sent(route)["model"] == "local-model"


@pytest.mark.anyio
async def test_extra_keywords_reach_the_provider_and_messages_stay_untouched(
    provider: respx.MockRouter,
) -> None:
    route = provider.post(OPENAI_URL).mock(return_value=httpx.Response(200, json=completion()))
    messages = [dict(m) for m in MESSAGES]
    await llm(top_p=0.5, seed=7).complete(messages)
    body = sent(route)
    assert body["top_p"] == 0.5 and body["seed"] == 7
    assert messages == MESSAGES


# --------------------------------------------------------------------------- retries


@pytest.mark.anyio
async def test_429_then_200_is_retried(provider: respx.MockRouter) -> None:
    route = provider.post(OPENAI_URL).mock(
        side_effect=[error(429, "Rate limit reached"), httpx.Response(200, json=completion())]
    )
    response = await llm().complete(MESSAGES)
    assert response.content == "Hello!"
    assert route.call_count == 2


@pytest.mark.anyio
async def test_503_then_200_is_retried(provider: respx.MockRouter) -> None:
    route = provider.post(OPENAI_URL).mock(
        side_effect=[error(503, "overloaded"), httpx.Response(200, json=completion())]
    )
    assert (await llm().complete(MESSAGES)).content == "Hello!"
    assert route.call_count == 2


@pytest.mark.anyio
@pytest.mark.parametrize(
    "failure",
    [httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("gone")],
    ids=["connect", "read-timeout", "dropped"],
)
async def test_transport_failures_are_retried(
    provider: respx.MockRouter, failure: Exception
) -> None:
    route = provider.post(OPENAI_URL).mock(
        side_effect=[failure, httpx.Response(200, json=completion())]
    )
    assert (await llm().complete(MESSAGES)).content == "Hello!"
    assert route.call_count == 2


@pytest.mark.anyio
async def test_retry_after_is_honoured(provider: respx.MockRouter) -> None:
    route = provider.post(OPENAI_URL).mock(
        side_effect=[
            error(429, "slow down", headers={"retry-after": "0.3"}),
            httpx.Response(200, json=completion()),
        ]
    )
    start = time.monotonic()
    await llm().complete(MESSAGES)
    assert time.monotonic() - start >= 0.29  # the backoff alone would be ~1 ms
    assert route.call_count == 2


@pytest.mark.anyio
async def test_retry_after_is_capped(provider: respx.MockRouter) -> None:
    provider.post(OPENAI_URL).mock(
        side_effect=[
            error(429, "slow down", headers={"retry-after": "3600"}),
            httpx.Response(200, json=completion()),
        ]
    )
    policy = FAST.model_copy(update={"max_retry_after": 0.05})
    start = time.monotonic()
    await llm(retry_policy=policy).complete(MESSAGES)
    assert time.monotonic() - start < 5


@pytest.mark.anyio
async def test_repeated_500s_give_llm_error_after_max_attempts(provider: respx.MockRouter) -> None:
    route = provider.post(OPENAI_URL).mock(return_value=error(500, "internal error"))
    with pytest.raises(LLMError) as caught:
        await llm().complete(MESSAGES)
    assert route.call_count == 3
    assert caught.value.attempts == 3
    assert caught.value.status_code == 500
    assert "InternalServerError" in str(caught.value) and "500" in str(caught.value)


@pytest.mark.anyio
async def test_max_retries_sets_the_attempt_count(provider: respx.MockRouter) -> None:
    route = provider.post(OPENAI_URL).mock(return_value=error(502, "bad gateway"))
    model = LLM("openai/gpt-4o-mini", api_key=KEY, max_retries=0)
    with pytest.raises(LLMError) as caught:
        await model.complete(MESSAGES)
    assert route.call_count == 1 and caught.value.attempts == 1
    assert LLM("openai/x", max_retries=2).policy.max_attempts == 3


# --------------------------------------------------------------------------- fast failures


@pytest.mark.anyio
@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_client_errors_fail_fast_after_one_request(
    provider: respx.MockRouter, status: int
) -> None:
    route = provider.post(OPENAI_URL).mock(return_value=error(status, "nope"))
    with pytest.raises(LLMError) as caught:
        await llm().complete(MESSAGES)
    assert route.call_count == 1
    assert caught.value.status_code == status
    assert caught.value.attempts == 1
    assert str(status) in str(caught.value)


@pytest.mark.anyio
async def test_401_names_the_error_and_never_the_key(provider: respx.MockRouter) -> None:
    leak = f"Incorrect API key provided: {KEY}. Authorization: Bearer {KEY}"
    route = provider.post(OPENAI_URL).mock(return_value=error(401, leak))
    model = llm()
    with pytest.raises(LLMError) as caught:
        await model.complete(MESSAGES)
    assert route.call_count == 1
    text = str(caught.value)
    assert "401" in text and "Error" in text
    for shown in (text, repr(caught.value), repr(model), str(model)):
        assert KEY not in shown
        assert "0123456789abcdefghij" not in shown


@pytest.mark.anyio
async def test_context_window_error_is_not_retried(provider: respx.MockRouter) -> None:
    body = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    route = provider.post(OPENAI_URL).mock(return_value=httpx.Response(400, json=body))
    with pytest.raises(LLMError) as caught:
        await llm().complete(MESSAGES)
    assert route.call_count == 1
    assert "ContextWindowExceededError" in str(caught.value)


# --------------------------------------------------------------------------- construction


def test_repr_and_str_hide_the_api_key() -> None:
    model = LLM("anthropic/claude-sonnet", api_key=KEY, temperature=0.1)
    assert KEY not in repr(model) and KEY not in str(model)
    assert "anthropic/claude-sonnet" in repr(model)
    assert model.api_key is not None and model.api_key.get_secret_value() == KEY


def test_model_by_keyword_and_extras() -> None:
    model = LLM(model="ollama/llama3", api_base="http://localhost:11434", top_p=0.9)
    assert model.model == "ollama/llama3"
    assert model.extra == {"top_p": 0.9}
    assert model.policy == RetryPolicy(max_attempts=4)


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError):
        LLM("")
    with pytest.raises(ValueError):
        LLM("openai/x", timeout=0)
    with pytest.raises(ValueError):
        LLM("openai/x", max_retries=-1)


def test_request_kwargs_turn_off_hidden_retries() -> None:
    kwargs = LLM("openai/x", timeout=7, num_retries=5).request_kwargs(MESSAGES)
    assert kwargs["max_retries"] == 0
    assert "num_retries" not in kwargs
    assert kwargs["timeout"] == 7
    assert "api_key" not in kwargs and "temperature" not in kwargs and "tools" not in kwargs


def test_to_chat_response_tolerates_provider_variations() -> None:
    raw = {
        "model": "m",
        "choices": [
            {
                "message": {
                    "content": "",
                    "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    response = to_chat_response(raw)
    assert response.content == ""
    assert response.usage == TokenUsage()
    [call] = response.tool_calls
    assert call.name == "f" and json.loads(call.arguments) == {"x": 1}
    assert call.id.startswith("call_")


def test_to_chat_response_without_choices_is_an_llm_error() -> None:
    with pytest.raises(LLMError):
        to_chat_response({"choices": []})
