"""Task: what is to be done, by which agent (or deterministic handler), with which context."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentensemble._validation import check_review, check_tools, require_text
from agentensemble.agent import Agent
from agentensemble.outputs import TaskOutput

DEFAULT_EXPECTED_OUTPUT = "A complete and accurate response to the task."


@dataclass(frozen=True)
class TaskHandlerContext:
    """What a deterministic task's handler receives."""

    description: str
    expected_output: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    context_outputs: list[TaskOutput] = field(default_factory=list)


class Task(BaseModel):
    """One unit of work. ``description`` and ``expected_output`` may use ``{variables}``."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    description: str
    expected_output: str = DEFAULT_EXPECTED_OUTPUT
    agent: Agent | None = None
    context: list[Task] = Field(default_factory=list)
    tools: list[Any] = Field(default_factory=list)
    output_type: type[BaseModel] | None = None
    handler: Callable[[TaskHandlerContext], Any] | None = None
    review: Any = None
    before_review: Any = None
    name: str | None = None

    @field_validator("description", "expected_output")
    @classmethod
    def _non_blank(cls, value: str, info: Any) -> str:
        return require_text(value, info.field_name)

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: list[Any]) -> list[Any]:
        return check_tools(value)

    @field_validator("review", "before_review")
    @classmethod
    def _review(cls, value: Any, info: Any) -> Any:
        return check_review(value, info.field_name)

    @field_validator("handler")
    @classmethod
    def _handler(cls, value: Any) -> Any:
        if isinstance(value, type):  # callable, so it would be "called" with the context
            raise ValueError(
                f"handler got the class {value.__name__}; pass a function taking the "
                "TaskHandlerContext (or an instance whose __call__ takes it)"
            )
        return value

    @model_validator(mode="after")
    def _handler_or_agent(self) -> Task:
        if self.handler is not None:
            if self.agent is not None:
                raise ValueError("a task has either an agent or a handler, not both")
            if self.tools:
                raise ValueError("a task with a handler makes no model call, so it takes no tools")
        return self

    @property
    def label(self) -> str:
        """A short name for messages: the task's name or the start of its description."""
        if self.name:
            return self.name
        first = self.description.strip().splitlines()[0]
        return first if len(first) <= 60 else first[:57] + "..."

    def __repr__(self) -> str:
        return f"Task({self.label!r})"

    __str__ = __repr__
