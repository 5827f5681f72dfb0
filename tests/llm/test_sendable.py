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


def _rebuilt(value: object) -> object:
    """The plain rule, rebuilding everything: what ``sendable`` must equal."""
    if isinstance(value, str):
        return sendable_text(value)
    if isinstance(value, dict):
        return {_rebuilt(k) if isinstance(k, str) else k: _rebuilt(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_rebuilt(item) for item in value)
    return value


surrogate_json = st.recursive(
    st.integers() | st.text(alphabet=st.sampled_from(["a", "é", "\ud800", "\udfff", REPLACEMENT])),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet=st.sampled_from(["k", "\ud800", REPLACEMENT])), children)
    ),
    max_leaves=20,
)


@given(surrogate_json)
def test_copying_only_after_the_first_change_gives_the_plain_rebuild(value: object) -> None:
    sent, rebuilt = sendable(value), _rebuilt(value)
    assert sent == rebuilt
    if isinstance(value, dict):
        assert list(sent) == list(rebuilt)  # the keys' order too


def test_a_surrogate_deep_down_is_cleaned_once_per_level() -> None:
    deep: object = "a\ud800"
    for _ in range(200):  # each level cleaned twice would be 2**200 steps: this would not end
        deep = [{"k": deep}]
    sent = sendable(deep)
    for _ in range(200):
        sent = sent[0]["k"]  # type: ignore[index]
    assert sent == f"a{REPLACEMENT}"
