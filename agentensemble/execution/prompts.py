"""Prompt text for one agent on one task. Pure functions: same inputs, same prompt."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property

from agentensemble._dataclass import dataclass

STANDARD_INSTRUCTIONS = (
    "Work on the task below until it is complete. "
    "Use the available tools when they help; when a tool returns an error, correct the call "
    "or take another way. "
    "When you are done, reply with your final answer only, in the form the task expects."
)


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


class ContextItems(tuple[ContextItem, ...]):
    """Context items with each one's section beside them, in order: a prompt is then one join
    of the sections, with no work per item. A run gives task ``n`` task ``n - 1``'s items plus
    the new ones (``extended``), so the work per task is in proportion to what is new."""

    sections: tuple[str, ...]

    def __new__(
        cls, items: Iterable[ContextItem] = (), sections: tuple[str, ...] | None = None
    ) -> ContextItems:
        made = super().__new__(cls, items)
        made.sections = tuple(item.section for item in made) if sections is None else sections
        return made

    def extended(self, items: Sequence[ContextItem]) -> ContextItems:
        """These items, then ``items``."""
        if not items:
            return self
        return ContextItems((*self, *items), self.sections + tuple(i.section for i in items))


def build_system_prompt(
    role: str,
    goal: str,
    background: str | None = None,
    response_format: str | None = None,
) -> str:
    """``You are {role}.``, background, goal, standard instructions, optional response format."""
    parts = [f"You are {role}."]
    if background and background.strip():
        parts.append(background.strip())
    parts.append(f"Your goal: {goal}")
    parts.append(STANDARD_INSTRUCTIONS)
    if response_format and response_format.strip():
        parts.append(f"## Response Format\n{response_format.strip()}")
    return "\n\n".join(parts)


def build_user_prompt(
    description: str,
    expected_output: str,
    context: Sequence[ContextItem] = (),
    output_instructions: str | None = None,
) -> str:
    """Context from previous tasks (if any), then ``## Task`` and ``## Expected Output``.

    One join of the parts (each context item a ``### `` section, see ``ContextItem.section``):
    a prompt holding every earlier output is copied once, not once more per enclosing part."""
    parts: list[str] = []
    if context:
        parts.append("## Context from Previous Tasks")
        if isinstance(context, ContextItems):
            parts += context.sections
        else:
            parts += [item.section for item in context]
    parts.append(f"## Task\n{description}")
    parts.append(f"## Expected Output\n{expected_output}")
    if output_instructions:
        parts.append(output_instructions)
    return "\n\n".join(parts)


__all__ = [
    "STANDARD_INSTRUCTIONS",
    "ContextItem",
    "ContextItems",
    "build_system_prompt",
    "build_user_prompt",
]
