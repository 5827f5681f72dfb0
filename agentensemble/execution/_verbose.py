"""``Agent(verbose=True)``: that agent's prompts and answers on stderr, safe to look at.

Everything shown comes from a model, a tool or a task text, so it is treated as hostile: secrets
are redacted (``redact_text``), and characters that could hide or fake what a terminal shows
(control characters and escape sequences, lone surrogates, bidi overrides U+202A-U+202E and
U+2066-U+2069, zero-width and other invisible format characters) are written as visible
escapes. A display failure (a closed stream, an encoding it cannot take) never stops the run.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from agentensemble.llm.types import ChatResponse, Message
from agentensemble.logging import redact_text

_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # control characters (newline and tab kept)
    "\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\ud800-\udfff]"  # lone surrogates
)


def visible(text: str) -> str:
    """``text`` redacted, with every unsafe character as an escape such as ``\\u202e``."""
    return _UNSAFE.sub(_escape, redact_text(text))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class Transcript:
    """Prints one agent's conversation as it happens: new messages before each model call,
    each answer after it."""

    def __init__(self, role: str, stream: TextIO | None = None) -> None:
        self._role = role
        self._stream = stream
        self._shown = 0

    def messages(self, messages: Sequence[Message]) -> None:
        """Show the messages not shown yet (the prompts, then tool results and nudges)."""
        for message in messages[self._shown :]:
            self._message(message)
        self._shown = len(messages)

    def answer(self, response: ChatResponse) -> None:
        """Show a model answer: its text and the tool calls it asks for."""
        if response.content:
            self._print("answer", response.content)
        for call in response.tool_calls:
            self._print("tool call", f"{call.name}({call.arguments})")

    def _message(self, message: Message) -> None:
        role = str(message.get("role", "?"))
        if role == "assistant":  # already shown as an answer
            return
        label = {"system": "system prompt", "user": "prompt", "tool": "tool result"}.get(role, role)
        content: Any = message.get("content")
        self._print(label, content if isinstance(content, str) else str(content or ""))

    def _print(self, label: str, text: str) -> None:
        stream = self._stream or sys.stderr
        line = f"[{visible(self._role)}] {label}: {visible(text)}\n"
        try:
            encoding = getattr(stream, "encoding", None) or "utf-8"
            stream.write(line.encode(encoding, "backslashreplace").decode(encoding))
            stream.flush()
        except (OSError, ValueError, LookupError):  # closed or broken stream: never fatal
            return


__all__ = ["Transcript", "visible"]
