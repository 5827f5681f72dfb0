"""Python objects that examples/crew.yaml names by import path (``crew_tools:word_count``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agentensemble import GuardrailResult, TaskOutput, tool


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


class Brief(BaseModel):
    """The writer's brief: a headline and the points to cover."""

    headline: str
    points: list[str] = Field(description="three to five points, one sentence each")


def not_empty(output: TaskOutput) -> GuardrailResult:
    """An output guardrail: the answer must say something."""
    if not output.raw.strip():
        return GuardrailResult.failure("the answer is empty")
    return GuardrailResult.success()
