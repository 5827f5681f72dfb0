"""HTML to text for HttpFetch: the visible text, in one linear pass, inside the call's deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from agentensemble.tools.builtin._html import ConversionTimeout, html_to_text

BOUND = 30.0  # a bound on a hang, not a speed target


@pytest.mark.parametrize(
    ("page", "text"),
    [
        ("<p>a</p><p>b</p>", "a\nb"),
        ("<title>T</title><style>p {}</style><h1>Hi</h1><script>x<y</script>z", "T\nHi\nz"),
        ("<SCRIPT type='x'>alert(1)</Script >after", "after"),
        ("A &amp; B &lt;tag&gt; &#233;", "A & B <tag> é"),
        ("<a title=\"x>y\" href='>'>link</a>", "link"),
        ("<!-- hidden --><p>shown</p><!doctype html><?xml x?>", "shown"),
        ("a < b and c > d", "a < b and c > d"),
        ("<br/>one<br>two<div>three</div>", "one\ntwo\nthree"),
        ("<p>  lots   of\t space </p>", "lots of space"),
        ("<svg/>kept", "kept"),
        ("text<!-- never closed", "text"),
        ("text<p class='never closed", "text"),
        ("text<script>never closed", "text"),
    ],
)
def test_visible_text(page: str, text: str) -> None:
    assert html_to_text(page) == text


def finishes(fn: Callable[[], str]) -> str:
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(fn()), daemon=True)
    thread.start()
    thread.join(BOUND)
    assert outcome, f"still converting after {BOUND} s"
    return outcome[0]


@pytest.mark.parametrize(
    "page",
    [
        "<!--" * 250_000,  # quadratic and worse in html.parser
        "<a" * 500_000,
        "</" * 500_000,
        "<![" * 300_000,  # html.parser raised AssertionError on this one
        "<a " + '"" ' * 300_000,
        "<" * 1_000_000,
        "<script>" * 120_000,
        "&#" * 500_000,
    ],
)
def test_hostile_pages_convert_in_one_pass(page: str) -> None:
    finishes(lambda: html_to_text(page))


def test_the_deadline_covers_the_conversion() -> None:
    with pytest.raises(ConversionTimeout):
        html_to_text("<p>x</p>" * 10_000, deadline=time.monotonic() - 1)
