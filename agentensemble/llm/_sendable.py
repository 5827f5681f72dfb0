"""Text that can always be sent: lone surrogates become U+FFFD before a request is built.

A lone surrogate (``"\\ud800"``) is a valid Python ``str`` but cannot be encoded as UTF-8. It
arrives easily: a model's JSON escape, a tool output, a file name from ``os.listdir`` on a
filesystem with undecodable bytes. Left in a message it made every request fail locally
(``UnicodeEncodeError``), which litellm reported as "HTTP 500" and we retried. Both model lanes
pass messages and tool specs through ``sendable`` in one place, so no request can fail that way.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def sendable_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the same object if none)."""
    if text.isascii():
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def sendable(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with lone surrogates replaced everywhere.

    Containers are copied only where something changed; keys are cleaned too.
    """
    if isinstance(value, str):
        return sendable_text(value)
    if isinstance(value, dict):
        cleaned = {
            sendable_text(k) if isinstance(k, str) else k: sendable(v) for k, v in value.items()
        }
        same = len(cleaned) == len(value) and all(
            k in value and cleaned[k] is value[k] for k in cleaned
        )
        return value if same else cleaned
    if isinstance(value, (list, tuple)):
        items = [sendable(item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value


__all__ = ["REPLACEMENT", "sendable", "sendable_text"]
