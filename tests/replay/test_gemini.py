"""Gemini on recorded traffic: thought signatures sent back on the part they came with (a text
turn and a streamed function call), no empty text part beside a call, and a SAFETY stop raised
as ``ModelRefusalError`` at once."""

from __future__ import annotations

from typing import Any

import pytest
from replay_server import load, model, sse_data

from agentensemble import Agent, Ensemble, ModelRefusalError, Task, tool

pytestmark = pytest.mark.anyio

GEMINI = "gemini/gemini-3-pro-preview"


def recorded_parts(name: str, index: int = 0) -> list[dict[str, Any]]:
    body = load(name)["interactions"][index]["response"]["body"]
    parts: list[dict[str, Any]] = body["candidates"][0]["content"]["parts"]
    return parts


async def test_a_thinking_text_turn_goes_back_with_its_thought_and_signature(
    replay: Any,
) -> None:
    server = replay("gemini/thinking_two_turns")
    llm = model(GEMINI, server)
    history: list[dict[str, Any]] = [{"role": "user", "content": "How do I cross the street?"}]

    first = await llm.complete(history)
    history += [first.to_message(), {"role": "user", "content": "And a river?"}]
    await llm.complete(history)

    thought, answer = recorded_parts("gemini/thinking_two_turns")
    assert first.reasoning == thought["text"]
    assert first.content == answer["text"]
    assert first.usage.reasoning_tokens == 1001
    sent = server.requests[1].body["contents"][1]
    assert sent["role"] == "model"
    signed = [part for part in sent["parts"] if "thoughtSignature" in part]
    assert [part["thoughtSignature"] for part in signed] == [answer["thoughtSignature"]]
    assert {"text": thought["text"], "thought": True} in sent["parts"]
    assert all(part.get("text") != "" for part in sent["parts"])


@tool
def get_country() -> str:
    """The user's country."""
    return "Mexico"


def test_a_streamed_call_goes_back_with_its_signature_and_no_empty_text(replay: Any) -> None:
    server = replay("gemini/stream_thought_signature")
    agent = Agent(role="Guide", goal="Answer", tools=[get_country], llm=model(GEMINI, server))
    task = Task(description="What is the capital of the user country?", agent=agent)

    async def collect() -> list[Any]:
        return [event async for event in Ensemble(tasks=[task]).astream()]

    import anyio

    events = anyio.run(collect)

    stream = load("gemini/stream_thought_signature")["interactions"][0]["response"]["sse"]
    first_event = sse_data(stream)[0]
    (recorded_call,) = first_event["candidates"][0]["content"]["parts"]
    model_turn = server.requests[1].body["contents"][1]
    assert model_turn["role"] == "model"
    (part,) = model_turn["parts"]  # the call alone: no {"text": ""} beside it
    assert part["thoughtSignature"] == recorded_call["thoughtSignature"]  # as Gemini sent it
    assert part["function_call"]["name"] == "get_country"
    assert events[-1].output.raw == "The capital of Mexico is Mexico City."


def test_a_safety_stop_raises_a_refusal_error_at_once(replay: Any) -> None:
    server = replay("gemini/safety")
    agent = Agent(role="Comic", goal="Joke", llm=model("gemini/gemini-1.5-flash", server))
    task = Task(description="Tell me a joke.", agent=agent)

    with pytest.raises(ModelRefusalError) as caught:
        Ensemble(tasks=[task]).run()

    assert caught.value.finish_reason == "content_filter"  # litellm's name for SAFETY
    assert caught.value.refusal == ""
    assert "content filter" in str(caught.value)
    assert len(server.requests) == 1  # not asked again as an "empty answer"
