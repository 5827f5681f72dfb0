"""The one parser for structured input from outside: bounded in size, depth and time, and every
failure a clean UntrustedInputError (never a RecursionError, never a frozen event loop)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from agentensemble import UntrustedInputError
from agentensemble.untrusted import (
    OFF_LOOP_CHARS,
    DuplicateKeyError,
    aparse_json,
    depth_exceeds,
    parse_json,
)

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": [1, 2, {"b": null}]}', {"a": [1, 2, {"b": None}]}),
        (b'{"a": "\xc3\xa9"}', {"a": "é"}),
        ("42", 42),
        ('"text"', "text"),
    ],
)
def test_parses_ordinary_json(text: str | bytes, expected: Any) -> None:
    assert parse_json(text) == expected


@pytest.mark.parametrize(
    ("text", "options", "reason"),
    [
        ("{not json", {}, "not valid JSON (Expecting property name"),
        (DEEP, {}, "nested too deeply"),  # RecursionError in json.loads: caught
        ("[" * 60 + "]" * 60, {"max_depth": 50}, "nested too deeply (more than 50 levels"),
        ('{"a": {"b": {"c": 1}}}', {"max_depth": 2}, "nested too deeply"),
        ("1" * 5000, {}, "not usable JSON (Exceeds the limit"),
        ("[" + "1," * 100 + "1]", {"max_chars": 100}, "too large (203 characters; at most 100"),
        (b"\xff\xfe", {}, "not valid UTF-8"),
        ('{"to": "ann", "to": "eve"}', {"unique_keys": True}, "duplicate key 'to'"),
        ('\ufeff{"a": 1}', {}, "Unexpected UTF-8 BOM"),
        ('\ufeff{"a": 1}', {"unique_keys": True}, "Unexpected UTF-8 BOM"),  # the same error
        ('{"a": [1, {"b": 2}', {"unique_keys": True}, "not valid JSON (Expecting ',' delimiter"),
    ],
)
def test_every_failure_is_one_clean_error(
    text: str | bytes, options: dict[str, Any], reason: str
) -> None:
    with pytest.raises(UntrustedInputError) as info:
        parse_json(text, what="the answer", **options)
    assert reason in str(info.value)
    assert str(info.value).startswith("the answer is ")
    assert isinstance(info.value, ValueError)  # callers catching ValueError keep working


def test_a_duplicate_key_names_the_key_and_is_kept_only_when_asked() -> None:
    with pytest.raises(DuplicateKeyError) as info:
        parse_json('{"a": {"to": 1, "to": 2}}', unique_keys=True)
    assert info.value.key == "to"
    assert parse_json('{"to": 1, "to": 2}') == {"to": 2}
    # the decoder kept for unique keys holds nothing from the call that failed
    assert parse_json('{"to": 1, "cc": {"to": 2}}', unique_keys=True) == {"to": 1, "cc": {"to": 2}}


def test_depth_is_counted_without_recursion() -> None:
    value: Any = 1
    for _ in range(50_000):  # deeper than Python's recursion limit
        value = [value]
    assert depth_exceeds(value, 100)
    assert not depth_exceeds([[1], {"a": [2]}], 3)
    assert depth_exceeds([[1], {"a": [2]}], 2)


def test_the_async_parser_keeps_the_event_loop_free_for_large_input() -> None:
    big = json.dumps(["x" * 100] * (OFF_LOOP_CHARS // 50))
    threads: set[str] = set()
    real = json.loads

    def spying_loads(*args: Any, **kwargs: Any) -> Any:
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    async def main() -> Any:
        return await aparse_json(big, what="the body")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json, "loads", spying_loads)
        parsed = asyncio.run(main())
    assert parsed == json.loads(big)
    assert threads == {"agentensemble-parse"}


def test_the_async_parser_gives_up_at_its_deadline() -> None:
    started, release = threading.Event(), threading.Event()
    real = json.loads

    def stuck_loads(*args: Any, **kwargs: Any) -> Any:
        started.set()
        release.wait(30)
        return real(*args, **kwargs)

    async def main() -> None:
        await aparse_json("[" + "1," * OFF_LOOP_CHARS + "1]", what="the body", timeout=0.2)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json, "loads", stuck_loads)
        with pytest.raises(UntrustedInputError, match="the body is too slow to parse"):
            asyncio.run(main())
    assert started.is_set()
    release.set()


def test_async_errors_are_the_same_clean_errors() -> None:
    with pytest.raises(UntrustedInputError, match="nested too deeply"):
        asyncio.run(aparse_json(DEEP * 2))
