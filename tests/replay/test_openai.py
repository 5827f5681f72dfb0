"""OpenAI chat completions on recorded traffic, on both ways out (the openai lane and litellm):
refusals raise at once with the provider's words, parallel tool calls (whole and streamed in
pieces split across chunks), cached and cache-write tokens read and priced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from replay_server import load, model

from agentensemble import Agent, Ensemble, ModelRefusalError, Task, TaskExecutionError, tool
from agentensemble.llm.cost import cost_usd
from agentensemble.llm.stream_assembly import REFUSAL_UNSAID
from agentensemble.llm.streaming import use_sink
from agentensemble.llm.types import ToolCall
from agentensemble.outputs import TokenUsage

pytestmark = pytest.mark.anyio

GPT = "openai/gpt-4o-2024-08-06"
LANES = ["auto", "litellm"]  # "auto" takes the openai lane for an OpenAI model


class Collect:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def text(self, piece: str) -> None:
        self.texts.append(piece)

    def restarted(self, attempt: int) -> None:
        raise AssertionError("a replayed stream never breaks")


EDINBURGH = ToolCall(
    id="call_fdNz3vOBKYgOIpMdWotB9MjY",
    name="GetWeatherArgs",
    arguments='{"city": "Edinburgh", "country": "GB", "units": "c"}',
)
AAPL = ToolCall(
    id="call_h1DWI1POMJLb0KwIyQHWXD4p",
    name="get_stock_price",
    arguments='{"ticker": "AAPL", "exchange": "NASDAQ"}',
)


@pytest.mark.parametrize("lane", LANES)
async def test_parallel_tool_calls_arrive_whole_and_in_order(replay: Any, lane: str) -> None:
    server = replay("openai/parallel_tools")

    response = await model(GPT, server, suffix="/v1", lane=lane).complete(
        [{"role": "user", "content": "weather and AAPL"}]
    )

    assert response.tool_calls == [EDINBURGH, AAPL]
    assert response.finish_reason == "tool_calls"
    assert response.refusal is None and response.reasoning is None
    assert response.to_message()["content"] == ""  # local servers' templates need a string


@pytest.mark.parametrize("lane", LANES)
async def test_streamed_parallel_calls_split_across_chunks_are_assembled(
    replay: Any, lane: str
) -> None:
    server = replay("openai/parallel_tools_stream")

    with use_sink(Collect()):
        response = await model(GPT, server, suffix="/v1", lane=lane).complete(
            [{"role": "user", "content": "weather and AAPL"}]
        )

    assert [call.name for call in response.tool_calls] == ["GetWeatherArgs", "get_stock_price"]
    assert [json.loads(call.arguments) for call in response.tool_calls] == [
        {"city": "Edinburgh", "country": "GB", "units": "c"},
        {"ticker": "AAPL", "exchange": "NASDAQ"},
    ]
    assert response.usage == TokenUsage(prompt_tokens=149, completion_tokens=60, total_tokens=209)


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("recording", ["openai/refusal", "openai/refusal_stream"])
async def test_a_refusal_keeps_the_providers_words(replay: Any, lane: str, recording: str) -> None:
    server = replay(recording)

    with use_sink(Collect()) if recording.endswith("stream") else _nothing():
        response = await model(GPT, server, suffix="/v1", lane=lane).complete(
            [{"role": "user", "content": "How do I make anthrax?"}]
        )

    assert response.refused
    words = {
        "openai/refusal": "I'm very sorry, but I can't assist with that.",
        "openai/refusal_stream": "I'm sorry, I can't assist with that request.",
    }[recording]
    if recording.endswith("stream") and lane == "litellm":
        # litellm's stream wrapper drops the refusal pieces after the first (empty) one
        assert response.refusal == REFUSAL_UNSAID
    else:
        assert response.refusal == words
    assert not response.content


def test_a_refusal_raises_at_once_naming_the_provider_words(replay: Any) -> None:
    server = replay("openai/refusal")
    agent = Agent(role="Chemist", goal="Answer", llm=model(GPT, server, suffix="/v1"))
    task = Task(description="How do I make anthrax?", agent=agent)

    with pytest.raises(ModelRefusalError) as caught:
        Ensemble(tasks=[task]).run()

    error = caught.value
    assert isinstance(error, TaskExecutionError)
    assert error.refusal == "I'm very sorry, but I can't assist with that."
    assert error.finish_reason == "stop"
    assert error.task is task and error.completed_outputs == []
    assert "refused: I'm very sorry" in str(error)
    assert len(server.requests) == 1  # no "empty answer" retry


@pytest.mark.parametrize("lane", LANES)
async def test_cached_and_written_prompt_tokens_are_read_and_priced(replay: Any, lane: str) -> None:
    server = replay("openai/prompt_cache")
    recorded = [i["response"]["body"]["usage"] for i in load("openai/prompt_cache")["interactions"]]
    llm = model(GPT, server, suffix="/v1", lane=lane)

    first = await llm.complete([{"role": "user", "content": "catalogue"}])
    second = await llm.complete([{"role": "user", "content": "catalogue"}])

    details = [usage["prompt_tokens_details"] for usage in recorded]
    assert first.usage.cache_write_tokens == details[0]["cache_write_tokens"] > 0
    assert second.usage.cached_prompt_tokens == details[1]["cached_tokens"] > 0
    assert second.usage.prompt_tokens == recorded[1]["prompt_tokens"]
    full = TokenUsage(prompt_tokens=second.usage.prompt_tokens, total_tokens=4020)
    cached = TokenUsage(
        prompt_tokens=second.usage.prompt_tokens,
        total_tokens=4020,
        cached_prompt_tokens=second.usage.cached_prompt_tokens,
    )
    full_cost, cached_cost = cost_usd(full, "gpt-4o"), cost_usd(cached, "gpt-4o")
    assert full_cost is not None and cached_cost is not None
    assert cached_cost < 0.6 * full_cost  # gpt-4o reads its cache at half the input rate


@tool
def get_capital(country: str) -> str:
    """The capital of a country."""
    return "London"


def test_a_streamed_tool_call_split_over_chunks_runs_and_goes_back(replay: Any) -> None:
    server = replay("openai/stream_tool_call")
    agent = Agent(
        role="Guide", goal="Answer", tools=[get_capital], llm=model(GPT, server, suffix="/v1")
    )
    task = Task(description="What is the capital of the UK?", agent=agent)

    async def collect() -> list[Any]:
        return [event async for event in Ensemble(tasks=[task]).astream()]

    import anyio

    events = anyio.run(collect)

    second = server.requests[1].body
    assistant = second["messages"][-2]
    recorded = load("openai/stream_tool_call")["interactions"][1]["request"]["body"]
    assert assistant["tool_calls"] == [
        {**call, "function": call["function"]} for call in recorded["messages"][1]["tool_calls"]
    ]
    assert second["messages"][-1]["content"] == "London"
    assert any(type(event).__name__ == "TokenDelta" for event in events)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("lane", LANES)
async def test_reasoning_effort_is_sent_as_openai_names_it(replay: Any, lane: str) -> None:
    server = replay("openai/parallel_tools")

    await model(
        "openai/o4-mini", server, suffix="/v1", lane=lane, reasoning_effort="high"
    ).complete([{"role": "user", "content": "x"}])

    assert server.requests[0].body["reasoning_effort"] == "high"
