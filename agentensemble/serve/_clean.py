"""Remote and served text made safe before a person or a model reads it (``mcp_review.shown``,
``a2a_remote.untrusted``): characters that drive a terminal or hide or reorder what is shown are
dropped first (so a secret split by one is whole again), then secrets are redacted, then the
text is bounded by the caller.

Dropped: controls but newline and tab (ANSI and C1 escapes, a carriage return that overwrites a
line), format characters (bidi overrides, isolates and marks, zero-width spaces and joiners,
the BOM), lone surrogates, private-use and unassigned code points, line and paragraph
separators: the categories ``agentensemble._display`` escapes for a terminal.
"""

from __future__ import annotations

import re
import unicodedata

from agentensemble.logging import redact_text

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_KEPT = frozenset("\n\t")
_PLAIN = re.compile(r"[\x20-\x7e\n\t]*")  # nothing to drop: the common case, no per-char work


def drop_hidden(text: str) -> str:
    """``text`` without the characters listed in the module docstring."""
    if _PLAIN.fullmatch(text):
        return text
    table = {
        ord(char): None
        for char in set(text)
        if char not in _KEPT and unicodedata.category(char) in _HIDDEN_CATEGORIES
    }
    return text.translate(table) if table else text


def cleaned(text: str) -> str:
    """Hidden characters dropped, then secrets redacted (the order matters: see above)."""
    return redact_text(drop_hidden(text))


__all__ = ["cleaned", "drop_hidden"]
