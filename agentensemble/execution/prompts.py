"""Prompt text for one agent on one task. Pure functions: same inputs, same prompt."""

from __future__ import annotations

from collections.abc import Sequence

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
    """Context from previous tasks (if any), then ``## Task`` and ``## Expected Output``."""
    sections: list[str] = []
    if context:
        items = [
            f"### {item.task_description} ({item.agent_role})\n{item.output}" for item in context
        ]
        sections.append("## Context from Previous Tasks\n\n" + "\n\n".join(items))
    sections.append(f"## Task\n{description}")
    sections.append(f"## Expected Output\n{expected_output}")
    if output_instructions:
        sections.append(output_instructions)
    return "\n\n".join(sections)


__all__ = ["STANDARD_INSTRUCTIONS", "ContextItem", "build_system_prompt", "build_user_prompt"]
