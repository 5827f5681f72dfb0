"""What the console keeps from hostile JSON: every string escaped, every size bounded."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentensemble_web._sanitize import MAX_ITEMS, MAX_TEXT, clean

_HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@given(json_values)
def test_no_kept_string_hides_a_character(value: Any) -> None:
    kept = clean(value)
    json.dumps(kept)  # still JSON
    for text in _strings(kept):
        assert not any(ch not in "\n\t" and unicodedata.category(ch) in _HIDDEN for ch in text), (
            repr(text)
        )


def test_sizes_and_depth_are_bounded() -> None:
    deep: Any = "x"
    for _ in range(50):
        deep = [deep]
    kept = clean({"long": "y" * (MAX_TEXT * 3), "many": list(range(MAX_ITEMS * 5)), "deep": deep})
    assert len(kept["long"]) < MAX_TEXT + 50
    assert len(kept["many"]) == MAX_ITEMS
    assert "nested too deeply" in json.dumps(kept["deep"])


def test_values_a_browser_cannot_parse_are_dropped() -> None:
    kept = clean(json.loads('{"a": Infinity, "b": NaN, "c": [-Infinity, 1.5]}'))
    assert kept == {"a": None, "b": None, "c": [None, 1.5]}
    json.dumps(kept, allow_nan=False)
