"""Every request can be encoded: lone surrogates become U+FFFD, everything else is untouched."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agentensemble.llm._sendable import REPLACEMENT, sendable, sendable_text

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_like)
def test_anything_sendable_encodes_as_utf8_json(value: object) -> None:
    json.dumps(sendable(value), ensure_ascii=False).encode("utf-8")


@given(json_like)
def test_text_without_surrogates_is_returned_as_it_was(value: object) -> None:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return
    assert sendable(value) is value


def test_a_lone_surrogate_in_a_tool_message_and_a_tool_spec_is_replaced() -> None:
    messages = [
        {"role": "tool", "tool_call_id": "c1", "content": "file \udcff.txt"},
        {"role": "user", "content": "ok"},
    ]
    spec = {"type": "function", "function": {"name": "ls\ud800", "parameters": {}}}
    sent = sendable([messages, spec])
    assert sent[0][0]["content"] == f"file {REPLACEMENT}.txt"
    assert sent[0][1] is messages[1]  # untouched parts are not copied
    assert sent[1]["function"]["name"] == f"ls{REPLACEMENT}"
    assert messages[0]["content"] == "file \udcff.txt"  # the caller's history is not changed


def test_sendable_text_keeps_real_non_ascii() -> None:
    assert sendable_text("Zürich 🌊 \ud800") == f"Zürich 🌊 {REPLACEMENT}"
