"""Incoming JSON made safe to keep and show: every string escaped, every size bounded.

Events and reviews arrive over HTTP from any process holding the token, and carry model and
tool text, so they are hostile. Senders redact what they post (``wire``, ``WebReviewHandler``);
the console applies the redaction policy again to every string it keeps, a second line for a
sender that did not. ``clean`` copies a decoded JSON value keeping at most
``MAX_DEPTH`` levels, ``MAX_ITEMS`` entries per container and ``MAX_TEXT`` characters per string,
each string passed through ``escape_for_display`` (controls, bidi overrides and zero-width
characters become visible escapes). Markup is made inert by the page, which only ever sets
``textContent``.
"""

from __future__ import annotations

import math
from typing import Any

from agentensemble._base.display import escape_for_display
from agentensemble.redaction import redact_text

MAX_TEXT = 20_000
MAX_ITEMS = 200
MAX_DEPTH = 8
TRUNCATED = " …[truncated]"


def clean_text(value: str, limit: int = MAX_TEXT) -> str:
    """``value`` redacted (the one policy: credential shapes, secrets registered in this
    process), escaped for display and cut to ``limit`` characters."""
    text = escape_for_display(redact_text(value))
    return text if len(text) <= limit else text[:limit] + TRUNCATED


def clean(value: Any, depth: int = 0) -> Any:
    """A bounded, escaped copy of a decoded JSON value (see the module docstring)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None  # Python's JSON reads Infinity and NaN; a browser's cannot
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth >= MAX_DEPTH:
        return "…[nested too deeply]"
    if isinstance(value, dict):
        items = list(value.items())[:MAX_ITEMS]
        return {clean_text(str(k), 200): clean(v, depth + 1) for k, v in items}
    if isinstance(value, list):
        return [clean(v, depth + 1) for v in value[:MAX_ITEMS]]
    return clean_text(repr(value))


__all__ = ["MAX_TEXT", "clean", "clean_text"]
