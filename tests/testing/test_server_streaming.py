"""The scripted OpenAI-compatible server streams when asked (``stream: true``): server-sent
events in HTTP chunks, text word by word, tool-call arguments in fragments, usage on request,
``[DONE]`` at the end; a ``stream_break`` fault cuts the stream mid-way."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentensemble.testing import OpenAICompatibleServer
from agentensemble.testing.openai_server import Fault


def sse_events(response: httpx.Response) -> list[Any]:
    events = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def post(server: OpenAICompatibleServer, **body: Any) -> list[Any]:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **body}
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", f"{server.base_url}/chat/completions", json=request) as response,
    ):
        assert response.headers["content-type"] == "text/event-stream"
        return sse_events(response)


def test_a_text_answer_streams_word_by_word_and_ends_with_done() -> None:
    with OpenAICompatibleServer() as server:
        server.push_text("Hello there world", usage=(3, 3))
        events = post(server, stream=True, stream_options={"include_usage": True})

    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "Hello there world"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    assert chunks[-1]["usage"]["total_tokens"] == 6


def test_tool_call_arguments_arrive_in_fragments() -> None:
    with OpenAICompatibleServer() as server:
        server.push_tool_calls([("add", {"a": 1, "b": 2})])
        events = post(server, stream=True)

    fragments = [
        call["function"]["arguments"]
        for c in events[:-1]
        for call in c["choices"][0]["delta"].get("tool_calls") or []
    ]
    assert len(fragments) == 3 and "".join(fragments) == '{"a": 1, "b": 2}'


def test_a_stream_break_cuts_the_stream_before_its_end() -> None:
    with OpenAICompatibleServer() as server:
        server.push(Fault(kind="stream_break", body="partial words"))
        with pytest.raises(httpx.RemoteProtocolError):
            post(server, stream=True)
