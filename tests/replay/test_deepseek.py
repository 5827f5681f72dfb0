"""DeepSeek (an OpenAI-compatible API with reasoning) on recorded traffic: ``reasoning_content``
kept and sent back with the turn it belongs to, the text beside tool calls kept, parallel calls,
cached tokens, and reasoning streamed as ``ReasoningDelta``."""

from __future__ import annotations

from typing import Any

import pytest
from replay_server import load, model

from agentensemble import Agent, Ensemble, ReasoningDelta, Task, TokenDelta, tool
from agentensemble.llm.types import ProviderPart

pytestmark = pytest.mark.anyio

REASONER = "deepseek/deepseek-reasoner"


def recorded_message(index: int) -> dict[str, Any]:
    body = load("deepseek/thinking_tools")["interactions"][index]["response"]["body"]
    message: dict[str, Any] = body["choices"][0]["message"]
    return message


async def test_reasoning_content_and_the_text_beside_calls_go_back_as_written(
    replay: Any,
) -> None:
    server = replay("deepseek/thinking_tools", 0, 1)
    llm = model(REASONER, server, suffix="/v1")
    history: list[dict[str, Any]] = [{"role": "user", "content": "Roll a die; I guess 4."}]

    first = await llm.complete(history)
    history.append(first.to_message())
    history.append({"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "ok"})
    await llm.complete(history)

    recorded = recorded_message(0)
    assert first.reasoning == recorded["reasoning_content"]
    assert first.provider_parts == (
        ProviderPart("deepseek", "reasoning_content", recorded["reasoning_content"]),
    )
    assert first.usage.cached_prompt_tokens == 512 and first.usage.reasoning_tokens == 60
    sent = server.requests[1].body["messages"][1]
    assert sent == {
        "role": "assistant",
        "content": "Let me load the dice rolling capability!",  # the text beside the call
        "reasoning_content": recorded["reasoning_content"],  # byte for byte
        "tool_calls": [
            {
                "id": "call_00_sXqYgMESDht75NCLLZtt9804",
                "type": "function",
                "function": {"name": "load_capability", "arguments": '{"id": "DICE_ROLL"}'},
            }
        ],
    }


async def test_reasoning_goes_only_to_the_provider_it_came_from(replay: Any) -> None:
    deepseek = replay("deepseek/thinking_tools", 0)
    openai = replay("openai/parallel_tools")
    first = await model(REASONER, deepseek, suffix="/v1").complete(
        [{"role": "user", "content": "x"}]
    )
    history = [{"role": "user", "content": "x"}, first.to_message()]
    history.append({"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "ok"})

    await model("openai/gpt-4o", openai, suffix="/v1").complete(history)

    sent = openai.requests[0].body["messages"][1]
    assert "reasoning_content" not in sent and "_provider" not in sent
    assert sent["content"] == "Let me load the dice rolling capability!"


@tool
def load_capability(id: str) -> str:
    """Load a capability."""
    return f"{id} loaded"


@tool
def get_player_name() -> str:
    """The player's name."""
    return "Anne"


@tool
def roll_dice() -> str:
    """Roll a die."""
    return "4"


def test_parallel_calls_run_and_each_turn_goes_back_with_its_own_reasoning(replay: Any) -> None:
    server = replay("deepseek/thinking_tools", 0, 1, 2)
    agent = Agent(
        role="Host",
        goal="Play dice",
        tools=[load_capability, get_player_name, roll_dice],
        llm=model(REASONER, server, suffix="/v1"),
    )
    task = Task(description="Roll a die; I guess 4.", agent=agent)

    output = Ensemble(tasks=[task]).run().task_outputs[0]

    third = server.requests[2].body["messages"]
    turns = [m for m in third if m["role"] == "assistant"]
    assert [t["reasoning_content"] for t in turns] == [
        recorded_message(0)["reasoning_content"],
        recorded_message(1)["reasoning_content"],
    ]
    assert [c["function"]["name"] for c in turns[1]["tool_calls"]] == [
        "get_player_name",
        "roll_dice",
    ]
    assert output.raw == recorded_message(2)["content"]
    assert output.reasoning == recorded_message(2)["reasoning_content"]
    assert output.usage.reasoning_tokens > 0


@pytest.mark.parametrize(
    ("name", "lane"),
    [(REASONER, "litellm"), ("openai/deepseek-reasoner", "auto")],  # litellm; the openai lane
)
def test_reasoning_streams_as_reasoning_deltas_beside_the_text(
    replay: Any, name: str, lane: str
) -> None:
    server = replay("deepseek/thinking_stream")
    llm = model(name, server, suffix="/v1", lane=lane)
    agent = Agent(role="Greeter", goal="Greet", llm=llm)
    task = Task(description="Hello", agent=agent)

    async def collect() -> list[Any]:
        return [event async for event in Ensemble(tasks=[task]).astream()]

    import anyio

    events = anyio.run(collect)

    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    text = "".join(e.text for e in events if isinstance(e, TokenDelta))
    assert reasoning.startswith('Hmm, the user just said "Hello".')
    final = events[-1].output.task_outputs[0]
    assert final.reasoning == reasoning
    assert text == final.raw
    assert reasoning not in final.raw  # reasoning is never the answer another task reads
