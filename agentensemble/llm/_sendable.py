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

    Containers are copied only where something changed; keys are cleaned too. Nothing is built
    until the first change: every request's messages and tool specs pass through here, and
    almost none holds a surrogate (copying each dict on the way cost CPU and garbage).
    """
    if isinstance(value, str):
        return sendable_text(value)
    if isinstance(value, dict):
        for index, (key, item) in enumerate(value.items()):
            new_key = sendable_text(key) if isinstance(key, str) else key
            new_item = sendable(item)
            if new_key is not key or new_item is not item:  # each value is cleaned once
                items = list(value.items())
                cleaned = dict(items[:index])
                cleaned[new_key] = new_item
                for later_key, later in items[index + 1 :]:
                    if isinstance(later_key, str):
                        later_key = sendable_text(later_key)
                    cleaned[later_key] = sendable(later)
                return cleaned
        return value
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            new_item = sendable(item)
            if new_item is not item:  # each item is cleaned once
                rest = [sendable(later) for later in value[index + 1 :]]
                return type(value)([*value[:index], new_item, *rest])
        return value
    return value


__all__ = ["REPLACEMENT", "sendable", "sendable_text"]
