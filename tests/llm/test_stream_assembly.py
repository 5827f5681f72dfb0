"""Assembling streamed chunks into one turn: text pieces, tool calls spread over deltas by
index, usage from the last chunk, and a cut-off stream refused."""

from __future__ import annotations

from typing import Any

import pytest

from agentensemble.llm.stream_assembly import IncompleteStreamError, StreamAssembler
from agentensemble.llm.types import ToolCall


def chunk(
    content: str | None = None,
    calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if calls is not None:
        delta["tool_calls"] = calls
    body: dict[str, Any] = {"model": "m", "choices": [{"delta": delta, "finish_reason": finish}]}
    if usage is not None:
        body = {"model": "m", "choices": [], "usage": usage}
    return body


def call_delta(index: int, id: str | None = None, name: str | None = None, args: str = "") -> Any:
    function: dict[str, Any] = {"arguments": args}
    if name is not None:
        function["name"] = name
    return {"index": index, "id": id, "function": function}


def assemble(chunks: list[dict[str, Any]]) -> tuple[list[str], StreamAssembler]:
    assembler = StreamAssembler()
    return [piece for c in chunks if (piece := assembler.add(c))], assembler


def test_text_pieces_come_back_as_they_arrive_and_add_up() -> None:
    pieces, assembler = assemble(
        [
            chunk(""),
            chunk("Hel"),
            chunk("lo"),
            chunk(finish="stop"),
            chunk(usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}),
        ]
    )

    response = assembler.response()
    assert pieces == ["Hel", "lo"]
    assert (response.content, response.finish_reason, response.model) == ("Hello", "stop", "m")
    assert response.usage.total_tokens == 5 and response.tool_calls == []


@pytest.mark.parametrize(
    ("deltas", "expected"),
    [
        (  # one call, arguments in fragments
            [
                [call_delta(0, "c1", "add", "")],
                [call_delta(0, args='{"a": ')],
                [call_delta(0, args="1}")],
            ],
            [ToolCall("c1", "add", '{"a": 1}')],
        ),
        (  # two calls interleaved by index
            [
                [call_delta(0, "c1", "add", '{"a"'), call_delta(1, "c2", "mul", '{"b"')],
                [call_delta(1, args=": 2}")],
                [call_delta(0, args=": 1}")],
            ],
            [ToolCall("c1", "add", '{"a": 1}'), ToolCall("c2", "mul", '{"b": 2}')],
        ),
        (  # no arguments at all: an empty object
            [[call_delta(0, "c1", "now")]],
            [ToolCall("c1", "now", "{}")],
        ),
    ],
)
def test_tool_call_deltas_are_assembled_by_index(
    deltas: list[list[dict[str, Any]]], expected: list[ToolCall]
) -> None:
    _, assembler = assemble([chunk(calls=d) for d in deltas] + [chunk(finish="tool_calls")])

    response = assembler.response()
    assert response.tool_calls == expected
    assert response.content is None


def test_a_stream_cut_off_before_its_finish_reason_is_refused_as_retryable() -> None:
    _, assembler = assemble([chunk("Hel")])

    with pytest.raises(IncompleteStreamError, match="no finish_reason"):
        assembler.response()
    assert issubclass(IncompleteStreamError, ConnectionError)  # the retry policy retries it
