"""``Agent(verbose=True)``: that agent's prompts and answers on stderr, safe to look at.

Everything shown comes from a model, a tool or a task text, so it is treated as hostile: secrets
are redacted (``redact_text``), and characters that could hide or fake what a terminal shows
(control characters and escape sequences, lone surrogates, bidi overrides U+202A-U+202E and
U+2066-U+2069, zero-width and other invisible format characters) are written as visible
escapes. A display failure (a closed stream, an encoding it cannot take) never stops the run.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from agentensemble._base.display import escape_for_display
from agentensemble.llm.types import ChatResponse, Message
from agentensemble.redaction import redact_text


def visible(text: str, encoding: str | None = None) -> str:
    """``text`` redacted, with every unsafe character as an escape such as ``\\u202e`` (and any
    character ``encoding`` cannot take, too)."""
    return escape_for_display(redact_text(text), encoding=encoding)


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
        encoding = getattr(stream, "encoding", None) or "utf-8"
        line = f"[{visible(self._role, encoding)}] {label}: {visible(text, encoding)}\n"
        try:
            stream.write(line)
            stream.flush()
        except (OSError, ValueError):  # closed or broken stream: never fatal
            return


__all__ = ["Transcript", "visible"]
