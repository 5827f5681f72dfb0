"""``shown``: the text an MCP client's user reads in a review question (the served run's output,
a tool's input, the task) is hostile input made safe: nothing that drives a terminal or hides or
reorders what is shown, no secret (not even one split by an invisible character), bounded.
``untrusted`` (a remote A2A agent's answer, before our model sees it) follows the same rules."""

from __future__ import annotations

import pytest

from agentensemble.logging import register_secret
from agentensemble.serve.a2a_remote import untrusted
from agentensemble.serve.mcp_review import MAX_SHOWN_CHARS, shown

SECRET = "review-text-secret-0123456789"
register_secret(SECRET)
KEY = "sk-proj-abcdefghijklmnopqrstuv"

HIDDEN = [
    ("ANSI escape", "\x1b[31mred\x1b[0m", "\x1b"),
    ("C1 control sequence introducer", "\x9b31mred", "\x9b"),
    ("carriage return overwriting a line", "approve\rstop", "\r"),
    ("NUL", "a\x00b", "\x00"),
    ("DEL", "a\x7fb", "\x7f"),
    ("bidi override", "abc\u202edef", "\u202e"),
    ("bidi isolate", "abc\u2066def\u2069", "\u2066"),
    ("right-to-left mark", "abc\u200fdef", "\u200f"),
    ("Arabic letter mark", "abc\u061cdef", "\u061c"),
    ("zero-width space", "app\u200brove", "\u200b"),
    ("byte order mark", "\ufeffapprove", "\ufeff"),
    ("line separator", "one\u2028two", "\u2028"),
    ("private use", "a\ue000b", "\ue000"),
    ("lone surrogate", "a\ud800b", "\ud800"),
]

SECRETS = [
    ("registered secret", f"token {SECRET} here", SECRET),
    ("provider key", f"key {KEY} here", KEY),
    ("registered secret split by a zero-width space", f"{SECRET[:10]}\u200b{SECRET[10:]}", SECRET),
    ("provider key split by NUL", f"{KEY[:12]}\x00{KEY[12:]}", KEY),
    ("provider key split by a bidi override", f"{KEY[:8]}\u202e{KEY[8:]}", KEY),
]


@pytest.mark.parametrize("clean", [shown, untrusted], ids=["shown", "untrusted"])
@pytest.mark.parametrize(("label", "text", "hidden"), HIDDEN, ids=[row[0] for row in HIDDEN])
def test_characters_that_drive_or_hide_what_is_shown_are_dropped(
    clean: object, label: str, text: str, hidden: str
) -> None:
    result = clean(text)  # type: ignore[operator]
    assert hidden not in result
    assert result.isprintable() or set(result) - {"\n", "\t"} <= {
        c for c in result if c.isprintable()
    }


@pytest.mark.parametrize("clean", [shown, untrusted], ids=["shown", "untrusted"])
@pytest.mark.parametrize(("label", "text", "secret"), SECRETS, ids=[row[0] for row in SECRETS])
def test_secrets_never_show(clean: object, label: str, text: str, secret: str) -> None:
    result = clean(text)  # type: ignore[operator]
    assert secret not in result
    assert secret[:12] not in result  # not even its start


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("approve\n\tthis", "approve\n\tthis"),  # lines and indentation stay
        ("plain text", "plain text"),
        ("naïve café — 東京 ✓", "naïve café — 東京 ✓"),  # letters and symbols of any script stay
        ("", ""),
    ],
)
def test_ordinary_text_is_kept_as_it_is(text: str, expected: str) -> None:
    assert shown(text) == expected
    assert untrusted(text) == expected


@pytest.mark.parametrize(
    ("length", "limit"),
    [(MAX_SHOWN_CHARS * 10, MAX_SHOWN_CHARS), (5_000, 1_000), (50, 10), (50, 0)],
)
def test_long_text_is_bounded_and_says_so(length: int, limit: int) -> None:
    result = shown("x" * length, limit)
    assert len(result) <= max(limit, len("\n... (truncated)"))
    assert result.endswith("(truncated)")


def test_a_secret_across_the_limit_is_redacted_before_the_cut() -> None:
    text = "x" * 990 + SECRET + "y" * 100
    result = shown(text, 1_000)
    assert SECRET[:5] not in result and len(result) <= 1_000


def test_text_at_the_limit_is_not_cut() -> None:
    assert shown("x" * 1_000, 1_000) == "x" * 1_000
