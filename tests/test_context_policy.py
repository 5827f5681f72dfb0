"""The context policy's strategies as pure functions: old tool results become placeholders,
the oldest turns go first, a tool call and its result are always kept or dropped together."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble.context_policy import (
    ContextPolicy,
    drop_old_tool_results,
    fit,
    oldest_part,
    trim_oldest_turns,
    turns,
)

Message = dict[str, Any]


def call(n: int) -> Message:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": f"t{n}"}}],
    }


def result(n: int, text: str = "x" * 400) -> Message:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": text}


SYSTEM = {"role": "system", "content": "sys"}
PROMPT = {"role": "user", "content": "task"}
CONVERSATION = [SYSTEM, PROMPT, call(1), result(1), call(2), result(2), call(3), result(3)]


def words(messages: Sequence[Message]) -> int:
    """A stand-in token counter: one token per 10 characters of content, at least one each."""
    return sum(max(1, len(str(m.get("content") or "")) // 10) for m in messages)


def shape(messages: Sequence[Message]) -> list[str]:
    return [m["role"] + (":" + m["tool_call_id"] if m["role"] == "tool" else "") for m in messages]


@pytest.mark.parametrize(
    ("keep", "whole"),
    [(None, ["c1", "c2", "c3"]), (3, ["c1", "c2", "c3"]), (2, ["c2", "c3"]), (1, ["c3"]), (0, [])],
)
def test_tool_results_beyond_the_newest_are_replaced_by_a_placeholder(
    keep: int | None, whole: list[str]
) -> None:
    shorter = drop_old_tool_results(CONVERSATION, keep)
    assert shape(shorter) == shape(CONVERSATION)  # every call keeps its result message
    for message in shorter:
        if message["role"] == "tool":
            kept = message["tool_call_id"] in whole
            assert (message["content"] == "x" * 400) is kept
            if not kept:
                name = "t" + message["tool_call_id"][1:]
                assert message["content"] == (
                    f"[tool result of {name} removed to keep the conversation short: "
                    "400 characters]"
                )
    assert CONVERSATION[3]["content"] == "x" * 400  # the input is never changed


def test_a_turn_is_an_assistant_message_with_its_tool_results() -> None:
    two_calls = {**call(4), "tool_calls": [*call(4)["tool_calls"], *call(5)["tool_calls"]]}
    cut = turns([SYSTEM, PROMPT, two_calls, result(4), result(5), {"role": "assistant"}], 2)
    assert [shape(turn) for turn in cut] == [
        ["assistant", "tool:c4", "tool:c5"],
        ["assistant"],
    ]


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (
            200,
            [
                "system",
                "user",
                "assistant",
                "tool:c1",
                "assistant",
                "tool:c2",
                "assistant",
                "tool:c3",
            ],
        ),
        (100, ["system", "user", "assistant", "tool:c2", "assistant", "tool:c3"]),
        (50, ["system", "user", "assistant", "tool:c3"]),
        (1, ["system", "user", "assistant", "tool:c3"]),  # the head and the newest turn stay
    ],
)
def test_the_oldest_turns_go_first_and_a_call_never_loses_its_result(
    limit: int, expected: list[str]
) -> None:
    assert shape(trim_oldest_turns(CONVERSATION, 2, limit, words)) == expected


def test_the_part_a_summary_would_replace_is_the_oldest_whole_turns() -> None:
    old, rest = oldest_part(CONVERSATION, 2, 50, words)
    assert shape(old) == ["assistant", "tool:c1", "assistant", "tool:c2"]
    assert shape(rest) == ["system", "user", "assistant", "tool:c3"]


def test_fit_drops_old_tool_results_before_any_turn() -> None:
    policy = ContextPolicy(max_prompt_tokens=100, keep_tool_results=1)
    shorter = fit(CONVERSATION, policy, head=2, limit=60, count=words)
    assert shape(shorter) == shape(CONVERSATION)  # placeholders were enough: no turn dropped
    assert words(shorter) <= 60 < words(CONVERSATION)
    trimmed = fit(CONVERSATION, policy, head=2, limit=45, count=words)
    assert shape(trimmed) == ["system", "user", "assistant", "tool:c3"]


def test_the_count_grows_with_the_turns_not_their_square() -> None:
    calls = 0

    def counting(messages: Sequence[Message]) -> int:
        nonlocal calls
        calls += 1
        return words(messages)

    long = [SYSTEM, PROMPT] + [m for n in range(200) for m in (call(n), result(n))]
    trim_oldest_turns(long, 2, 50, counting)
    assert calls <= 200  # one count per dropped turn at most


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"max_prompt_tokens": 0}, "max_prompt_tokens"),
        ({"max_prompt_tokens": -10}, "max_prompt_tokens"),
        ({"max_prompt_tokens": True}, "max_prompt_tokens"),
        ({"max_prompt_tokens": "window"}, "max_prompt_tokens"),
        ({"keep_tool_results": -1}, "keep_tool_results"),
        ({"summarize_with": 3}, "summarize_with"),
        ({"summarize_with": "  "}, "summarize_with"),
        ({"window": 100}, "window"),
    ],
)
def test_a_policy_that_cannot_work_is_refused_naming_the_field(
    settings: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        ContextPolicy(**settings)
    assert caught.value.errors()[0]["loc"][0] == field
