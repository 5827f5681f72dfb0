"""CurrentDateTime (time zone aware) and JsonQuery (pick by path)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from builtin_helpers import call, refused

from agentensemble.errors import ConfigurationError
from agentensemble.tools.builtin import CurrentDateTime, JsonQuery

FIXED = datetime(2026, 3, 29, 0, 30, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("default", "asked", "expected"),
    [
        ("UTC", None, "2026-03-29T00:30:00+00:00 (Sunday, UTC)"),
        ("UTC", "Europe/Paris", "2026-03-29T01:30:00+01:00 (Sunday, Europe/Paris)"),
        ("America/New_York", None, "2026-03-28T20:30:00-04:00 (Saturday, America/New_York)"),
        ("UTC", "Asia/Kolkata", "2026-03-29T06:00:00+05:30 (Sunday, Asia/Kolkata)"),
    ],
)
def test_the_date_and_time_in_a_zone(default: str, asked: str | None, expected: str) -> None:
    tool = CurrentDateTime(default, clock=lambda: FIXED)
    assert call(tool, timezone=asked).output == expected


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "", "UTC\x00"])
def test_unknown_zones_are_refused(zone: str) -> None:
    result = call(CurrentDateTime(clock=lambda: FIXED), timezone=zone or " ")
    assert refused(result, "unknown time zone")


def test_a_bad_default_zone_fails_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="unknown time zone 'Nowhere'"):
        CurrentDateTime("Nowhere")


def test_the_real_clock_is_time_zone_aware() -> None:
    assert call(CurrentDateTime()).output.endswith(", UTC)")
    assert "+00:00" in call(CurrentDateTime()).output


DOCUMENT = '{"items": [{"name": "pen", "tags": ["a", "b"]}, {"name": "ink"}], "odd.key": 1}'


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("items[0].name", "pen"),
        ("$.items[-1].name", "ink"),
        ("items[0].tags", '["a", "b"]'),
        ("items[*].name", '["pen", "ink"]'),
        ('["odd.key"]', "1"),
        ("$", DOCUMENT.replace("'", '"')),
    ],
)
def test_json_query_picks_by_path(path: str, expected: str) -> None:
    result = call(JsonQuery(), document=DOCUMENT, path=path)
    assert result.is_success, result.error_message
    assert result.output == expected if path != "$" else result.output.startswith('{"items"')


@pytest.mark.parametrize(
    ("document", "path", "why"),
    [
        (DOCUMENT, "items[5]", "index 5 is out of range for a list of 2 item(s)"),
        (DOCUMENT, "items.name", "expects an object, found a list"),
        (DOCUMENT, "missing", "no key 'missing' at step 1; keys there: 'items', 'odd.key'"),
        (DOCUMENT, "items[0].name[0]", "expects a list, found a string"),
        (DOCUMENT, "items[0]..name", "cannot read path"),
        ("{not json", "a", "document is not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "$", "document is nested too deeply"),
        (DOCUMENT, "a" * 2000, "path is 2000 characters long"),
        (DOCUMENT, '["bad \\x escape"]', "cannot read the quoted key"),
    ],
)
def test_json_query_explains_what_went_wrong(document: str, path: str, why: str) -> None:
    assert refused(call(JsonQuery(), document=document, path=path), why)


def test_json_query_refuses_a_huge_answer() -> None:
    document = '{"big": "' + "x" * 50 + '"}'
    assert refused(
        call(JsonQuery(max_output_chars=10), document=document, path="big"), "at most 10"
    )
