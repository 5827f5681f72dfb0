"""escape_for_display: whatever a model, tool or webhook sends can be shown, and shown whole."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentensemble._base.display import escape_for_display

HOSTILE = [
    pytest.param("rm -rf /\rls -l", "rm -rf /\\rls -l", id="carriage-return-overwrites"),
    pytest.param("\x1b[2Jcleared", "\\x1b[2Jcleared", id="ansi-clear-screen"),
    pytest.param("ok\x1b[8mhidden", "ok\\x1b[8mhidden", id="ansi-conceal"),
    pytest.param("\x9b31m", "\\x9b31m", id="c1-csi"),
    pytest.param("bell\x07", "bell\\x07", id="bell"),
    pytest.param("a\ud800b", "a\\ud800b", id="lone-surrogate"),
    pytest.param("pay \u202eevil\u202c", "pay \\u202eevil\\u202c", id="bidi-override"),
    pytest.param("\u2066x\u2069", "\\u2066x\\u2069", id="bidi-isolate"),
    pytest.param(
        "to\u200b\u200c\u200d\u2060\ufeffx",
        "to\\u200b\\u200c\\u200d\\u2060\\ufeffx",
        id="zero-width",
    ),
    pytest.param("line\u2028sep", "line\\u2028sep", id="line-separator"),
    pytest.param("priv\ue000", "priv\\ue000", id="private-use"),
    pytest.param("a\r\nb\tc", "a\nb\tc", id="crlf-and-tab-kept"),
    pytest.param('plain text {"to": "alice"}', 'plain text {"to": "alice"}', id="plain"),
    pytest.param("caf\u00e9 \u65e5\u672c", "caf\u00e9 \u65e5\u672c", id="printable-unicode-kept"),
]


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_hostile_text_is_shown_as_visible_escapes(text: str, shown: str) -> None:
    assert escape_for_display(text) == shown


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "utf-8", "cp1252", "no-such-codec"])
def test_escaped_text_can_always_be_written_in_the_stream_encoding(encoding: str) -> None:
    text = "caf\u00e9 \u65e5\u672c \ud800 \u202e \U0001f600"
    shown = escape_for_display(text, encoding=encoding)
    target = "ascii" if encoding == "no-such-codec" else encoding
    shown.encode(target)  # never raises
    assert "\\ud800" in shown and "\\u202e" in shown
    if encoding == "ascii":
        assert "caf\\xe9 \\u65e5\\u672c" in shown and "\\U0001f600" in shown


@given(st.text())
def test_nothing_invisible_survives_and_output_is_encodable(text: str) -> None:
    shown = escape_for_display(text)
    shown.encode("utf-8")  # no lone surrogate left
    for char in shown:
        assert char in "\n\t" or unicodedata.category(char) not in {
            "Cc",
            "Cf",
            "Cs",
            "Co",
            "Cn",
            "Zl",
            "Zp",
        }
    escape_for_display(text, encoding="ascii").encode("ascii")
