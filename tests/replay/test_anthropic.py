"""Anthropic on recorded traffic: signed thinking blocks kept and sent back byte for byte, the
text beside a tool call kept, no empty text block, cache usage read and priced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from replay_server import load, model

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.llm.cost import cost_usd, price_table
from agentensemble.llm.streaming import use_sink
from agentensemble.outputs import TokenUsage

pytestmark = pytest.mark.anyio

CLAUDE = "anthropic/claude-sonnet-4-5"


@tool
def get_user_country() -> str:
    """The user's country."""
    return "Mexico"


def recorded_thinking(name: str, index: int = 0) -> dict[str, Any]:
    """The first thinking block of the recorded response at ``index``, as Anthropic sent it."""
    body = load(name)["interactions"][index]["response"]
    content = body["body"]["content"]
    return next(block for block in content if block["type"] == "thinking")


def test_a_thinking_turn_goes_back_with_its_signed_block_and_its_text(replay: Any) -> None:
    server = replay("anthropic/thinking_tools")
    agent = Agent(role="Guide", goal="Answer", tools=[get_user_country], llm=model(CLAUDE, server))
    task = Task(description="What is the largest city in the user country?", agent=agent)

    result = Ensemble(tasks=[task]).run()
    output = result.task_outputs[0]

    _, second = (request.body for request in server.requests)
    assistant = second["messages"][-2]
    assert assistant["role"] == "assistant"
    thinking, text, call = assistant["content"]
    assert thinking == {  # byte for byte, signature included
        "type": "thinking",
        "thinking": recorded_thinking("anthropic/thinking_tools")["thinking"],
        "signature": recorded_thinking("anthropic/thinking_tools")["signature"],
    }
    assert text == {
        "type": "text",
        "text": "I'll help you find the largest city in your country. First, let me determine "
        "which country you're from.",
    }
    assert call["type"] == "tool_use" and call["name"] == "get_user_country"
    assert second["messages"][-1]["content"][0]["type"] == "tool_result"
    assert "Mexico City" in output.raw
    assert output.reasoning is None  # the last turn's: it answered without thinking
    turns = result.trace.tasks[0].model_turns
    assert turns[0].reasoning == recorded_thinking("anthropic/thinking_tools")["thinking"]
    assert turns[1].reasoning is None


async def test_a_turn_of_only_tool_calls_sends_no_empty_text_block(replay: Any) -> None:
    server = replay("anthropic/thinking_tools")
    llm = model(CLAUDE, server)
    history: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    first = await llm.complete(history)
    turn = first.to_message()
    turn["content"] = ""  # as if the model wrote no text beside its call
    result = {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "Mexico"}
    history.extend([turn, result])

    await llm.complete(history)

    sent = server.requests[1].body["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["thinking", "tool_use"]
    assert "[System: Empty message content" not in json.dumps(server.requests[1].body)


async def test_cache_reads_and_writes_are_read_and_priced_at_their_rates(replay: Any) -> None:
    server = replay("anthropic/cache")
    llm = model(CLAUDE, server)
    recorded = [i["response"]["body"]["usage"] for i in load("anthropic/cache")["interactions"]]

    first = await llm.complete([{"role": "user", "content": "a long document"}])
    second = await llm.complete([{"role": "user", "content": "a long document"}])

    assert first.usage.cached_prompt_tokens == recorded[0]["cache_read_input_tokens"] > 0
    assert second.usage.cache_write_tokens == recorded[1]["cache_creation_input_tokens"] > 0
    assert second.usage.cached_prompt_tokens == recorded[1]["cache_read_input_tokens"]
    # counted within prompt_tokens, as providers report it
    assert second.usage.prompt_tokens >= second.usage.cached_prompt_tokens
    uncached = TokenUsage(
        prompt_tokens=first.usage.prompt_tokens,
        completion_tokens=first.usage.completion_tokens,
        total_tokens=first.usage.total_tokens,
    )
    full, cached = cost_usd(uncached, CLAUDE), cost_usd(first.usage, CLAUDE)
    prices = price_table()["claude-sonnet-4-5"]
    saved = 1111 * (prices["input_cost_per_token"] - prices["cache_read_input_token_cost"])
    assert full is not None and cached is not None
    assert full - cached == pytest.approx(saved)  # 1,111 tokens read at a tenth of the rate
    written = cost_usd(second.usage, CLAUDE)
    extra = 418 * (prices["cache_creation_input_token_cost"] - prices["input_cost_per_token"])
    plain = TokenUsage(
        prompt_tokens=second.usage.prompt_tokens,
        completion_tokens=second.usage.completion_tokens,
        total_tokens=second.usage.total_tokens,
        cached_prompt_tokens=second.usage.cached_prompt_tokens,
    )
    assert written == pytest.approx(cost_usd(plain, CLAUDE) + extra)  # writes cost more


async def test_prompt_cache_marks_the_system_text_and_the_last_tool(replay: Any) -> None:
    server = replay("anthropic/thinking_tools", 0)
    spec = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    other = {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}
    messages = [{"role": "system", "content": "stable"}, {"role": "user", "content": "hi"}]

    await model(CLAUDE, server).complete(messages, tools=[spec, other])

    body = server.requests[0].body
    assert body["system"] == [
        {"type": "text", "text": "stable", "cache_control": {"type": "ephemeral"}}
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1]["cache_control"] == {"type": "ephemeral"}


async def test_prompt_cache_off_marks_nothing(replay: Any) -> None:
    server = replay("anthropic/thinking_tools", 0)
    messages = [{"role": "system", "content": "stable"}, {"role": "user", "content": "hi"}]

    await model(CLAUDE, server, prompt_cache=False).complete(messages)

    assert "cache_control" not in json.dumps(server.requests[0].body)


class Collect:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.reasoning_pieces: list[str] = []

    def text(self, piece: str) -> None:
        self.texts.append(piece)

    def reasoning(self, piece: str) -> None:
        self.reasoning_pieces.append(piece)

    def restarted(self, attempt: int) -> None:
        raise AssertionError("a replayed stream never breaks")


async def test_a_streamed_thinking_turn_keeps_its_block_whole(replay: Any) -> None:
    server = replay("anthropic/thinking_stream", 0)
    sink = Collect()

    with use_sink(sink):
        response = await model(CLAUDE, server).complete([{"role": "user", "content": "hi"}])

    (part,) = response.provider_parts
    (block,) = part.value
    assert block["type"] == "thinking"
    assert block["signature"] and block["thinking"] == response.reasoning
    assert "".join(sink.reasoning_pieces) == response.reasoning
    assert "".join(sink.texts) == response.content


async def test_reasoning_effort_becomes_a_thinking_budget(replay: Any) -> None:
    server = replay("anthropic/thinking_tools", 0)

    await model(CLAUDE, server, reasoning_effort="low").complete([{"role": "user", "content": "x"}])

    thinking = server.requests[0].body["thinking"]
    assert thinking["type"] in ("enabled", "adaptive")
    assert thinking.get("budget_tokens", 1) > 0
