"""Streaming through litellm (``stream=True``) from the local server: text token by token,
tool calls assembled from their deltas, and a stream broken mid-way retried from the start."""

from __future__ import annotations

from typing import Any

import pytest
from openai_server import OpenAIServer

from agentensemble import (
    LLM,
    Agent,
    Ensemble,
    EnsembleCompleted,
    RetryPolicy,
    StreamRestarted,
    Task,
    TokenDelta,
    tool,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.usefixtures("model_lane")]

FAST = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.01, jitter=0)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def calculator(server: OpenAIServer) -> Ensemble:
    llm = LLM("openai/test-model", api_base=server.base_url, api_key="sk-e2e-x", retry_policy=FAST)
    agent = Agent(role="Calculator", goal="Add numbers", tools=[add], llm=llm)
    return Ensemble(tasks=[Task(description="Add 2 and 3", agent=agent, name="sum")])


async def collect(ensemble: Ensemble) -> list[Any]:
    return [event async for event in ensemble.astream()]


async def test_text_streams_token_by_token_and_tool_calls_are_assembled(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_tool_calls([("add", {"a": 2, "b": 3})], usage=(30, 6))
    openai_server.push_text("The sum of two and three is 5", usage=(45, 8))

    events = await collect(calculator(openai_server))

    assert all(request.get("stream") is True for request in openai_server.requests)
    deltas = [e.text for e in events if isinstance(e, TokenDelta)]
    assert len(deltas) == 8 and "".join(deltas) == "The sum of two and three is 5"
    output = events[-1].output
    assert isinstance(events[-1], EnsembleCompleted)
    assert output.raw == "The sum of two and three is 5"
    (call,) = output.task_outputs[0].tool_calls
    assert (call.arguments, call.output) == ('{"a": 2, "b": 3}', "5")
    assert output.usage.prompt_tokens == 75 and output.usage.completion_tokens == 14


async def test_a_stream_broken_mid_way_is_retried_and_the_consumer_told(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_fault(kind="stream_break", body="The sum is")
    openai_server.push_text("The sum is 5")

    events = await collect(calculator(openai_server))

    kinds = [type(e).__name__ for e in events]
    restart = kinds.index("StreamRestarted")
    before = [e.text for e in events[:restart] if isinstance(e, TokenDelta)]
    after = [e.text for e in events[restart:] if isinstance(e, TokenDelta)]
    assert "".join(before) == "The sum is"
    assert "".join(after) == "The sum is 5"
    restarted = events[restart]
    assert isinstance(restarted, StreamRestarted) and restarted.task_name == "sum"
    output = events[-1].output
    assert output.raw == "The sum is 5"
    assert output.task_outputs[0].metrics.retries == 1
    assert output.trace.tasks[0].model_turns[0].attempts == 2
