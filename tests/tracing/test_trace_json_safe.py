"""``json_safe`` skips the JSON round trip for values that are JSON data already: whatever the
value, the result is what the round trip gives (same data, same types), redacted, and shares
no container with the caller's value."""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict
from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble.logging import register_secret
from agentensemble.redaction import redact
from agentensemble.tracing._records import _plain, json_safe

SECRET = "sk-json-safe-test-0123456789abcdef"


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


class Point(BaseModel):
    x: int
    label: str


VALUES: list[Any] = [
    None,
    True,
    0,
    -1.5,
    "plain",
    f"key {SECRET} inside",
    {"city": "Oslo", "days": 3, "warm": True, "note": None},
    {"nested": {"list": [1, "two", {"three": [3.0]}]}, "api_key": "hunter2"},
    {"token": SECRET, "items": [SECRET, {"password": "x"}]},
    [1, [2, [3, []]], {}],
    {"tuple": (1, 2), "set": {1}},
    {1: "int key", None: "none key", 2.5: "float key", False: "bool key"},
    {"enum": Colour.RED, "int_enum": Level.HIGH, "str_sub": Name("n")},
    {Name("sub key"): 1},
    {"model": Point(x=1, label=SECRET)},
    {"object": complex(1, 2)},
    OrderedDict(a=1),
    {"nan": math.nan, "inf": math.inf, "neg_zero": -0.0, "big": 10**30},
    {"surrogate": "\ud800", "unicode": "æøå \u200b"},
    [{"role": "user", "content": f"use {SECRET}"}, {"role": "assistant", "tool_calls": []}],
]


def _round_trip(value: Any) -> Any:
    return json.loads(json.dumps(redact(value), default=_plain))


def _same(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down (nan equal to nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(
            type(k) is type(j) and _same(a[k], b[j]) for k, j in zip(a, b, strict=True)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_json_safe_gives_what_the_round_trip_gives(value: Any) -> None:
    register_secret(SECRET)
    safe = json_safe(value)
    assert _same(safe, _round_trip(value))
    assert SECRET not in json.dumps(safe)


def test_json_safe_shares_no_container_with_the_value() -> None:
    value = {"a": [1, {"b": [2]}], "c": {"d": "e"}}
    safe = json_safe(value)
    safe["a"][1]["b"].append(3)
    safe["c"]["d"] = "changed"
    assert value == {"a": [1, {"b": [2]}], "c": {"d": "e"}}
