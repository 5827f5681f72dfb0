"""A served run's session: the conversation a caller continues through the MCP server (the
tool's ``session`` argument) or the A2A agent (the message's context id).

The value a caller sends is untrusted text: it must be a non-blank string of at most
``MAX_SESSION_CHARS`` characters with no control or format characters, and it never names a
session by itself: ``caller_session`` puts the caller's identity in front of it (its token's
name, else its address; the one local client over stdio), so one caller cannot read or continue
another's conversation by sending the same value.
"""

from __future__ import annotations

import unicodedata
from typing import Any
from urllib.parse import quote

from agentensemble.serve._shape import BadArguments

SESSION_ARGUMENT = "session"
MAX_SESSION_CHARS = 200
LOCAL_CALLER = "local"
"""The caller over stdio (or in process): the one client that started the server."""


def takes_session(ensemble: Any, variables: Any, durable: Any) -> bool:
    """Whether a served ensemble accepts a session: it has a memory store to keep the
    conversation in, is not served durably (a durable run takes no session), and has no input
    of the same name (the input keeps its name)."""
    return ensemble.memory is not None and durable is None and SESSION_ARGUMENT not in variables


def session_schema() -> dict[str, Any]:
    """The MCP tool's optional ``session`` property."""
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_SESSION_CHARS,
        "description": (
            "continue this conversation: calls with the same session see its earlier exchanges "
            "(yours only; another caller's session of the same name is another conversation)"
        ),
    }


def checked_session(value: Any) -> str:
    """``value`` as a session name, else ``BadArguments`` saying what is wrong with it."""
    if not isinstance(value, str):
        raise BadArguments(f"session must be a string; got {type(value).__name__}")
    if not value.strip():
        raise BadArguments("session must not be blank")
    if len(value) > MAX_SESSION_CHARS:
        raise BadArguments(f"session is {len(value)} characters; at most {MAX_SESSION_CHARS}")
    if any(unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp") for char in value):
        raise BadArguments("session must not hold control, format or line-separator characters")
    return value


def caller_session(caller: str, value: Any) -> str | None:
    """The session a caller's run continues (``None`` when it sent none): its checked value
    behind the caller's identity (quoted, so no caller's name can end inside another's)."""
    if value is None:
        return None
    return f"served:{quote(caller or LOCAL_CALLER, safe='')}:{checked_session(value)}"


__all__ = [
    "LOCAL_CALLER",
    "MAX_SESSION_CHARS",
    "SESSION_ARGUMENT",
    "caller_session",
    "checked_session",
    "session_schema",
    "takes_session",
]
