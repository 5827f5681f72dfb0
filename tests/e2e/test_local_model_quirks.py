"""Local OpenAI-compatible servers (llama.cpp's server, llama-cpp-python, vLLM, Ollama) are
stricter than OpenAI about two things; a tool loop must work against a server enforcing both:

- an assistant turn with tool calls must carry ``content`` (a chat template reads it): a missing
  key or ``null`` is an HTTP 500 there;
- tools are used only when ``tool_choice`` is sent: without it the server answers in text.

The fake server below enforces both, and the loop runs on both model lanes.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentensemble import LLM, Agent, Ensemble, Task, tool
from agentensemble.testing import Fault, OpenAICompatibleServer, TextReply, ToolCallsReply

pytestmark = pytest.mark.e2e


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def strict_local_server(request: dict[str, Any]) -> Any:
    """Answers like a llama.cpp-style server with a strict chat template."""
    for message in request["messages"]:
        carries_text = isinstance(message.get("content"), str)
        if message.get("role") == "assistant" and message.get("tool_calls") and not carries_text:
            return Fault.http(500, body='{"error": "Value is not a string: content"}')
    if request.get("tools") and request.get("tool_choice") != "auto":
        return TextReply("I would add them, but I was given no tools.")  # tools ignored
    if any(message.get("role") == "tool" for message in request["messages"]):
        return TextReply("The sum is 42.")
    return ToolCallsReply((("add", '{"a": 2, "b": 40}'),))


@pytest.mark.parametrize("lane", ["auto", "litellm"], ids=["openai-lane", "litellm-lane"])
def test_a_tool_loop_works_against_a_strict_local_server(lane: str) -> None:
    with OpenAICompatibleServer() as server:
        server.set_responder(strict_local_server)
        llm = LLM(
            "openai/qwen2.5-0.5b",
            api_base=server.base_url,
            api_key="local",
            lane=lane,  # type: ignore[arg-type]
            max_retries=0,
        )
        assert llm.effective_lane == ("openai" if lane == "auto" else "litellm")
        agent = Agent(role="Calculator", goal="Add numbers", tools=[add], llm=llm)
        output = Ensemble(tasks=[Task(description="What is 2 + 40?", agent=agent)]).run()
        first, second = server.requests
    assert output.raw == "The sum is 42."
    assert first["tool_choice"] == "auto"
    assistant = next(m for m in second["messages"] if m["role"] == "assistant")
    assert assistant["content"] == "" and assistant["tool_calls"]


@pytest.mark.parametrize("lane", ["auto", "litellm"], ids=["openai-lane", "litellm-lane"])
def test_without_tools_no_tool_choice_is_sent(lane: str) -> None:
    with OpenAICompatibleServer(["plain"]) as server:
        llm = LLM("openai/m", api_base=server.base_url, api_key="local", lane=lane)  # type: ignore[arg-type]
        Ensemble(tasks=[Task(description="Hi", agent=Agent(role="R", goal="G", llm=llm))]).run()
        (request,) = server.requests
    assert "tool_choice" not in request and "tools" not in request


def test_a_tool_choice_set_by_the_user_is_kept() -> None:
    llm = LLM("openai/m", api_key="k", tool_choice="required")
    spec = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    kwargs = llm.request_kwargs([{"role": "user", "content": "x"}], [spec])  # type: ignore[list-item]
    assert kwargs["tool_choice"] == "required"
