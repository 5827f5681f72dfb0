"""Text from a model, a tool or a webhook made safe to show a human on a terminal.

One function, ``escape_for_display``, used by every place that prints text the user's code did
not write: console review, ``verbose=True`` progress, an agent's verbose output. Shown text can
then neither drive the terminal (ANSI escapes, a carriage return that overwrites a line), nor
hide or reorder what is shown (bidi overrides, zero-width characters), nor fail to print (a lone
surrogate, a character the stream's encoding lacks): a reviewer always sees every character,
invisible ones as visible escapes.
"""

from __future__ import annotations

import codecs
import re
import unicodedata

_KEPT = frozenset("\n\t")
# Categories never printed as themselves: controls (Cc), format characters (Cf: bidi overrides and
# isolates, zero-width spaces and joiners, the BOM, soft hyphen...), lone surrogates (Cs), private
# use (Co), unassigned code points (Cn), line and paragraph separators (Zl, Zp).
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# Fast path: text made only of printable ASCII, newlines and tabs needs no work.
_PLAIN = re.compile(r"[\x20-\x7e\n\t]*")


def _escape_char(char: str) -> str:
    code = ord(char)
    if char == "\r":
        return "\\r"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _is_hidden(char: str) -> bool:
    return char not in _KEPT and unicodedata.category(char) in _HIDDEN_CATEGORIES


def escape_for_display(text: str, *, encoding: str | None = None) -> str:
    """``text`` with every character a terminal would not show as itself written as an escape.

    Control characters (except newline and tab; ``\\r\\n`` becomes ``\\n``), lone surrogates,
    bidi overrides and isolates (U+202A-U+202E, U+2066-U+2069), zero-width and other format
    characters, private-use and unassigned code points become ``\\xNN`` / ``\\uNNNN`` /
    ``\\UNNNNNNNN``. With ``encoding`` (a stream's, e.g. ``"ascii"`` or ``"latin-1"``), characters
    that encoding cannot represent are escaped the same way, so the result can always be written.
    """
    text = text.replace("\r\n", "\n")
    if _PLAIN.fullmatch(text):
        return text
    if encoding:
        try:
            codecs.lookup(encoding)
        except LookupError:
            encoding = "ascii"
    # Decide once per distinct character, then replace with one regex pass: fast for megabytes.
    table = {
        char: _escape_char(char)
        for char in set(text)
        if _is_hidden(char) or (encoding and not _encodable(char, encoding))
    }
    if not table:
        return text
    pattern = re.compile("[" + "".join(re.escape(char) for char in table) + "]")
    return pattern.sub(lambda match: table[match.group()], text)


def escape_for_row(text: str, *, encoding: str | None = None) -> str:
    """``escape_for_display`` for one field of a one-line, tab-separated listing: newlines and
    tabs are escaped too (``\\n``, ``\\t``), so a value can never print as a fake row or
    column."""
    shown = escape_for_display(text, encoding=encoding)
    return shown.replace("\n", "\\n").replace("\t", "\\t")


def _encodable(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
    except UnicodeError:
        return False
    return True


__all__ = ["escape_for_display", "escape_for_row"]
