"""Prompt text for one agent on one task. Pure functions: same inputs, same prompt."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from itertools import islice
from typing import overload

from agentensemble._base.dataclass import dataclass
from agentensemble._base.prompt_layout import CONTEXT_HEADING, TASK_HEADING, context_end
from agentensemble.task import DEFAULT_EXPECTED_OUTPUT

STANDARD_INSTRUCTIONS = (
    "Work on the task below until it is complete. "
    "Use the available tools when they help; when a tool returns an error, correct the call "
    "or take another way. "
    "When you are done, reply with your final answer only, in the form the task expects."
)
"""The instruction paragraph every system prompt carried until round 4 (about 50 tokens on every
request). Models do all of it unasked; a team that wants it back passes it as an agent's
``instructions``."""


@dataclass(frozen=True)
class ContextItem:
    """One earlier task's output shown to the agent as context."""

    task_description: str
    agent_role: str
    output: str

    @cached_property
    def section(self) -> str:
        """The item as the prompt shows it, rendered once: a run keeps one item per output, and
        every later task naming that output shows the same text (its prompt is then a join)."""
        return f"### {self.task_description} ({self.agent_role})\n{self.output}"


class ContextItems(Sequence[ContextItem]):
    """Context items with each one's section beside them: a prompt is one join of the sections,
    with no work per item.

    A view of the first ``len(self)`` entries of two lists that may grow. ``extended`` appends to
    them in place when this view reaches their end, and copies them otherwise; either way no
    view ever changes. A run gives task ``n`` task ``n - 1``'s items extended by the new ones,
    so the work per task is in proportion to what is new, not to how many items it shows."""

    __slots__ = ("_count", "_items", "_sections")

    def __init__(self, items: Iterable[ContextItem] = ()) -> None:
        self._items = list(items)
        self._sections = [item.section for item in self._items]
        self._count = len(self._items)

    def extended(self, items: Iterable[ContextItem]) -> ContextItems:
        """These items, then ``items``."""
        more = list(items)
        if not more:
            return self
        if not self._count:  # never the lists of an empty view: one may be kept (a default)
            return ContextItems(more)
        grown = object.__new__(ContextItems)
        if self._count == len(self._items):  # the longest view of its lists: they grow
            grown._items, grown._sections = self._items, self._sections
        else:
            grown._items, grown._sections = self._items[: self._count], self.sections()
        grown._items += more
        grown._sections += [item.section for item in more]
        grown._count = len(grown._items)
        return grown

    def sections(self) -> list[str]:
        """Each item as the prompt shows it (``ContextItem.section``), in order."""
        return self._sections[: self._count]

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> ContextItem: ...

    @overload
    def __getitem__(self, index: slice) -> list[ContextItem]: ...

    def __getitem__(self, index: int | slice) -> ContextItem | list[ContextItem]:
        return self._items[: self._count][index]

    def __iter__(self) -> Iterator[ContextItem]:
        return islice(self._items, self._count)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ContextItems, tuple, list)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal by content, as a list

    def __repr__(self) -> str:
        return f"ContextItems({list(self)!r})"

    def __reduce__(self) -> tuple[type[ContextItems], tuple[list[ContextItem]]]:
        return ContextItems, (list(self),)


def build_system_prompt(
    role: str,
    goal: str,
    background: str | None = None,
    response_format: str | None = None,
) -> str:
    """``You are {role}.``, the background, ``Goal: {goal}``, the optional response format.

    Only the user's words and the few needed to tell them apart: this text is on every request
    of every turn (framework-added tokens are ``benchmarks/tokens.py``'s figure)."""
    lines = [f"You are {role}."]
    if background and background.strip():
        lines.append(background.strip())
    lines.append(f"Goal: {goal}")
    prompt = "\n".join(lines)
    if response_format and response_format.strip():
        prompt += f"\n\n## Response Format\n{response_format.strip()}"
    return prompt


def with_instructions(system_prompt: str, instructions: str | None) -> str:
    """The system prompt with an agent's instructions after it: the static text stays first, so
    a provider's prompt cache still matches it when the instructions change from run to run."""
    if not instructions or not instructions.strip():
        return system_prompt
    return f"{system_prompt}\n\n## Instructions\n{instructions.strip()}"


def with_skills(system_prompt: str, skills: Sequence[tuple[str, str]]) -> str:
    """The system prompt with the agent's skills listed, a line each (name: description); the
    agent reads one with ``load_skill`` when a task matches it."""
    if not skills:
        return system_prompt
    listed = "\n".join(f"- {name}: {description}" for name, description in skills)
    return f"{system_prompt}\n\n## Skills (load_skill when one fits)\n{listed}"


def build_user_prompt(
    description: str,
    expected_output: str | None,
    context: Sequence[ContextItem] = (),
    output_instructions: str | None = None,
) -> str:
    """Context from previous tasks (if any), ``## Task``, then ``## Expected Output`` when the
    user set one (``None`` or the default sentence adds nothing a model needs).

    One join of the parts (each context item a ``### `` section, see ``ContextItem.section``):
    a prompt holding every earlier output is copied once, not once more per enclosing part."""
    parts: list[str] = []
    if context:
        parts.append(CONTEXT_HEADING)
        if isinstance(context, ContextItems):
            parts += context.sections()
        else:
            parts += [item.section for item in context]
    parts.append(f"## Task\n{description}")
    if expected_output and expected_output != DEFAULT_EXPECTED_OUTPUT:
        parts.append(f"## Expected Output\n{expected_output}")
    if output_instructions:
        parts.append(output_instructions)
    return "\n\n".join(parts)


__all__ = [
    "CONTEXT_HEADING",
    "STANDARD_INSTRUCTIONS",
    "TASK_HEADING",
    "ContextItem",
    "ContextItems",
    "build_system_prompt",
    "build_user_prompt",
    "context_end",
    "with_instructions",
    "with_skills",
]
