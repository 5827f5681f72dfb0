"""Remote and served text made safe before a person or a model reads it (``mcp_review.shown``,
``a2a_remote.untrusted``): characters that drive a terminal or hide or reorder what is shown are
dropped first (``redaction.drop_hidden``), then secrets are redacted, then the text is bounded by
the caller.

Dropped: controls but newline and tab (ANSI and C1 escapes, a carriage return that overwrites a
line), format characters (bidi overrides, isolates and marks, zero-width spaces and joiners,
the BOM), lone surrogates, private-use and unassigned code points, line and paragraph
separators: the categories ``agentensemble._base.display`` escapes for a terminal.
"""

from __future__ import annotations

from agentensemble.logging import redact_text
from agentensemble.redaction import drop_hidden


def cleaned(text: str) -> str:
    """Hidden characters dropped, then secrets redacted (the order matters: see above)."""
    return redact_text(drop_hidden(text))


__all__ = ["cleaned", "drop_hidden"]
