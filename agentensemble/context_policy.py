"""Keeping a conversation inside the model's window: ``ContextPolicy`` and its strategies.

The strategies are pure functions of a message list (OpenAI chat format) and a token counter,
each testable on its own, applied in this order by ``fit``:

1. ``drop_old_tool_results``: tool results beyond the newest ``keep_tool_results`` become a
   one-line placeholder (the message stays, so each tool call keeps its answer);
2. ``trim_oldest_turns``: the oldest turns after the prompt are removed, an assistant turn
   always with its tool results (a lone ``tool`` message is rejected by OpenAI), until the
   conversation fits;
3. summarising the oldest part (``summarize_with=``) needs a model call and is not here:
   ``oldest_part`` says which messages a summary would replace.

The head of the conversation (the system prompt, session history and the task's own prompt) is
kept by those steps: ``head`` messages are counted but kept. When the head alone is over, two
more steps shorten it, in this order:

4. ``drop_oldest_exchanges``: the oldest session-history exchanges (a user message with the
   replies after it) are removed whole; the task's own prompt is never part of them;
5. ``cut_outputs``: earlier tasks' outputs shown under ``## Context`` are cut from their end,
   oldest first, each ending with a one-line marker saying how much was cut (``cut_text``);
   the start of each output stays, so a prompt's start changes as little as it can.
   Summarising an output instead (``summarize_with=``) is a model call, in the executor's layer.

The executor applies them before each model call through ``execution/_window.py`` (the window
from litellm's model table, the summary calls, one compaction and a retry on a provider's
context-length error).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Message = dict[str, Any]
TokenCount = Callable[[Sequence[Message]], int]
"""Tokens of a list of messages: a sum over the messages (trimming subtracts turn by turn)."""

#: What a dropped tool result is replaced with: the model sees that it was there.
PLACEHOLDER = "[tool result of {name} removed to keep the conversation short: {size} characters]"
#: The line that ends an earlier task's output cut to fit (``cut_text``).
CUT_MARKER = "[{cut:,} of {size:,} characters of this output cut to fit the context window]"
_PLACEHOLDER_SHAPE = re.compile(
    r"\[tool result of .+ removed to keep the conversation short: \d+ characters\]"
)


class ContextPolicy(BaseModel):
    """How a long conversation is kept inside the model's window.

    ``max_prompt_tokens``: a number, or ``"model"`` (the model's window from litellm's table).
    ``keep_tool_results``: how many of the newest tool results stay whole (None: all).
    ``summarize_with``: a model that summarises the oldest turns instead of dropping them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    max_prompt_tokens: int | Literal["model"] = Field(default="model")
    keep_tool_results: int | None = Field(default=None, ge=0)
    summarize_with: Any = Field(default=None, description="a model name or LLM")

    @field_validator("max_prompt_tokens", mode="before")
    @classmethod
    def _positive(cls, value: Any) -> Any:
        if isinstance(value, bool) or (isinstance(value, int) and value <= 0):
            raise ValueError(f"max_prompt_tokens must be more than 0 or 'model'; got {value!r}")
        return value

    @field_validator("summarize_with")
    @classmethod
    def _a_model(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip()):
            return value
        if isinstance(value, type) or not callable(getattr(value, "complete", None)):
            raise ValueError(
                f"summarize_with must be a model name or an LLM; got {type(value).__name__}"
            )
        return value


def _tool_names(messages: Sequence[Message]) -> dict[str, str]:
    """Tool call id -> tool name, from the assistant messages' calls."""
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            names[str(call.get("id"))] = str(function.get("name") or "a tool")
    return names


def drop_old_tool_results(messages: Sequence[Message], keep: int | None) -> list[Message]:
    """A copy of ``messages`` whose tool results beyond the newest ``keep`` are a one-line
    placeholder. Every tool message stays (its call keeps its answer); None keeps all."""
    result = list(messages)
    if keep is None:
        return result
    positions = [i for i, m in enumerate(result) if m.get("role") == "tool"]
    old = positions[: max(0, len(positions) - keep)]
    names = _tool_names(result)
    for position in old:
        message = result[position]
        content = str(message.get("content") or "")
        if _PLACEHOLDER_SHAPE.fullmatch(content):  # replaced at an earlier compaction
            continue
        name = names.get(str(message.get("tool_call_id")), "a tool")
        shown = PLACEHOLDER.format(name=name, size=len(content))
        if content != shown:
            result[position] = {**message, "content": shown}
    return result


def turns(messages: Sequence[Message], head: int) -> list[list[Message]]:
    """The messages after the first ``head``, cut into turns: a message, with an assistant
    message's tool results kept beside it (a tool message never starts a turn)."""
    cut: list[list[Message]] = []
    for message in messages[head:]:
        if message.get("role") == "tool" and cut:
            cut[-1].append(message)
        else:
            cut.append([message])
    return cut


def trim_oldest_turns(
    messages: Sequence[Message], head: int, limit: int, count: TokenCount
) -> list[Message]:
    """``messages`` with the oldest turns after the first ``head`` removed until ``count``
    says the rest fits in ``limit`` tokens. The head and the newest turn always stay (what
    cannot fit then is the caller's to report); a tool call never loses its result.

    ``count`` is a sum over messages: each turn is counted once and subtracted as it goes, so
    trimming is linear in the conversation, not quadratic."""
    kept = turns(messages, head)
    start = list(messages[:head])
    total = count(start) + sum(sizes := [count(turn) for turn in kept])
    first = 0
    while len(kept) - first > 1 and total > limit:
        total -= sizes[first]
        first += 1
    return start + [m for turn in kept[first:] for m in turn]


def oldest_part(
    messages: Sequence[Message], head: int, limit: int, count: TokenCount
) -> tuple[list[Message], list[Message]]:
    """``(old, rest)``: the oldest whole turns after the head that must go for the rest to fit
    (what a summary would replace), and the messages that stay."""
    kept = trim_oldest_turns(messages, head, limit, count)
    dropped = len(messages) - len(kept)
    return list(messages[head : head + dropped]), kept


def exchanges(history: Sequence[Message]) -> list[list[Message]]:
    """Session history cut into exchanges: each user message with the replies after it (a
    reply before any user message is an exchange of its own)."""
    cut: list[list[Message]] = []
    for message in history:
        if message.get("role") == "user" or not cut:
            cut.append([message])
        else:
            cut[-1].append(message)
    return cut


def drop_oldest_exchanges(
    messages: Sequence[Message], start: int, end: int, limit: int, count: TokenCount
) -> list[Message]:
    """``messages`` with the oldest whole exchanges of the session history ``messages[start:end]``
    removed until ``count`` says the rest fits in ``limit`` tokens, or no history is left. What
    is before ``start`` (the system prompt) and from ``end`` on (the task's prompt, its turns)
    always stays. Each exchange is counted once (linear, as ``trim_oldest_turns``)."""
    parts = exchanges(messages[start:end])
    sizes = [count(part) for part in parts]
    total = count(messages[:start]) + sum(sizes) + count(messages[end:])
    first = 0
    while first < len(parts) and total > limit:
        total -= sizes[first]
        first += 1
    return [*messages[:start], *(m for part in parts[first:] for m in part), *messages[end:]]


def cut_text(text: str, keep: int) -> str:
    """The first ``keep`` characters of ``text`` (back to a line or word break when one is
    near), then a one-line ``CUT_MARKER`` saying how much was cut; ``text`` itself when it is
    no longer than ``keep``. The start stays: a prompt holding it keeps its prefix."""
    if keep >= len(text):
        return text
    keep = max(0, keep)
    if keep:
        brk = max(text.rfind("\n", 0, keep + 1), text.rfind(" ", 0, keep + 1))
        if brk > 0 and brk > keep - 200:
            keep = brk
    kept = text[:keep].rstrip()
    marker = CUT_MARKER.format(cut=len(text) - len(kept), size=len(text))
    return f"{kept}\n{marker}" if kept else marker


def _cut_to(text: str, target: int, size: int, count: Callable[[str], int]) -> str:
    """``text`` cut (``cut_text``) to about ``target`` tokens, marker included: a share of the
    characters as the tokens' share, corrected a few times by the count."""
    keep = len(text) * target // max(1, size)
    for _ in range(4):
        shorter = cut_text(text, keep)
        got = count(shorter)
        if got <= target or keep == 0:
            return shorter
        keep = max(0, keep - len(text) * (got - target) // max(1, size) - 1)
    return cut_text(text, 0)


def cut_outputs(outputs: Sequence[str], budget: int, count: Callable[[str], int]) -> list[str]:
    """``outputs`` (earlier tasks' outputs, oldest first) with the oldest cut from their end
    (``cut_text``) until their tokens together are at most ``budget``: the newest stay whole as
    long as cutting the older ones makes room. An output the marker would not shorten stays
    whole; one with no room left is its marker alone."""
    result = list(outputs)
    sizes = [count(text) for text in result]
    over = sum(sizes) - budget
    for index, text in enumerate(result):
        if over <= 0:
            break
        shorter = _cut_to(text, max(0, sizes[index] - over), sizes[index], count)
        saved = sizes[index] - count(shorter)
        if saved > 0:
            result[index] = shorter
            over -= saved
    return result


def fit(
    messages: Sequence[Message],
    policy: ContextPolicy,
    *,
    head: int,
    limit: int,
    count: TokenCount,
) -> list[Message]:
    """The strategies in order: old tool results first, then the oldest turns if still over."""
    shorter = drop_old_tool_results(messages, policy.keep_tool_results)
    if count(shorter) <= limit:
        return shorter
    return trim_oldest_turns(shorter, head, limit, count)


__all__ = [
    "CUT_MARKER",
    "PLACEHOLDER",
    "ContextPolicy",
    "cut_outputs",
    "cut_text",
    "drop_old_tool_results",
    "drop_oldest_exchanges",
    "exchanges",
    "fit",
    "oldest_part",
    "trim_oldest_turns",
    "turns",
]
