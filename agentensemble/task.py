"""Task: what is to be done, by which agent (or deterministic handler), with which context."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentensemble._base.dataclass import dataclass
from agentensemble._base.validation import check_review, require_text
from agentensemble._memory_wiring import check_knowledge, check_scopes
from agentensemble.agent import Agent, check_tools
from agentensemble.attachments import attachment_list
from agentensemble.guardrails import check_guardrails
from agentensemble.hints import reject_foreign_names
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
    step_kind: ClassVar[str] = "task"

    description: str
    expected_output: str = DEFAULT_EXPECTED_OUTPUT
    agent: Agent | None = None
    context: list[Any] = Field(
        default_factory=list, description="earlier steps: Tasks, Loops, Graphs or Ensembles"
    )
    tools: list[Any] = Field(default_factory=list)
    output_type: Any = Field(
        default=None, description="a pydantic model, list[Item], int, str, Literal[...], ..."
    )
    handler: Callable[[TaskHandlerContext], Any] | None = None
    review: Any = None
    before_review: Any = None
    name: str | None = None
    max_output_retries: int = Field(
        default=2, ge=0, description="corrections asked for an answer that fails to parse"
    )
    input_guardrails: list[Any] = Field(default_factory=list)
    output_guardrails: list[Any] = Field(default_factory=list)
    for_each: str | None = Field(
        default=None, description="one run per item of inputs[for_each]; {item} and {index}"
    )
    memory: list[Any] = Field(
        default_factory=list,
        description="scopes searched before the task, written after it: names (templates) or "
        "MemoryScope(name, write=..., query=...)",
    )
    knowledge: list[Any] = Field(default_factory=list, description="Knowledge(paths=[...])")
    attachments: list[Any] = Field(
        default_factory=list, description="Image, Document or Audio sent with the task's request"
    )

    @model_validator(mode="before")
    @classmethod
    def _foreign_names(cls, data: Any) -> Any:
        return reject_foreign_names(cls, data)

    @field_validator("description", "expected_output")
    @classmethod
    def _non_blank(cls, value: str, info: Any) -> str:
        return require_text(value, info.field_name)

    @field_validator("context")
    @classmethod
    def _context(cls, value: list[Any]) -> list[Any]:
        for position, step in enumerate(value, start=1):
            kind = getattr(type(step), "step_kind", None)
            if kind not in ("task", "loop", "graph", "ensemble"):
                raise ValueError(
                    f"context item {position} is a {type(step).__name__}; context names "
                    "earlier steps: Tasks, Loops, Graphs or Ensembles"
                )
        return value

    @field_validator("for_each")
    @classmethod
    def _for_each(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("for_each must name an input (a list), e.g. for_each='documents'")
        return value

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: list[Any]) -> list[Any]:
        return check_tools(value)

    @field_validator("output_type")
    @classmethod
    def _output_type(cls, value: Any) -> Any:
        if value is None:
            return None
        from agentensemble.execution.structured import output_spec  # execution sits above

        try:
            output_spec(value)
        except Exception as error:
            raise ValueError(
                f"output_type {value!r} cannot be used: pydantic cannot build a JSON schema "
                f"for it ({type(error).__name__}: {error}). Use a pydantic model, a dataclass, "
                "list[...], dict[str, ...], int, float, bool, str or Literal[...]"
            ) from error
        return value

    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple, str)):
            return check_scopes(list(value) if isinstance(value, tuple) else value)
        raise ValueError(
            f"memory takes a list of scope names, e.g. memory=['notes']; got {value!r}"
        )

    @field_validator("knowledge")
    @classmethod
    def _knowledge(cls, value: list[Any]) -> list[Any]:
        return check_knowledge(value)

    @field_validator("attachments", mode="before")
    @classmethod
    def _attachments(cls, value: Any) -> list[Any]:
        return list(attachment_list(value, "attachments"))

    @field_validator("input_guardrails", "output_guardrails")
    @classmethod
    def _guardrails(cls, value: list[Any], info: Any) -> list[Any]:
        return check_guardrails(value, info.field_name)

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
            if self.attachments:
                raise ValueError(
                    "a task with a handler makes no model call, so it takes no attachments"
                )
        return self

    @property
    def label(self) -> str:
        """A short name for messages: the task's name or the start of its description."""
        if self.name:
            return self.name
        first = self.description.strip().splitlines()[0]
        return first if len(first) <= 60 else first[:57] + "..."

    def __hash__(self) -> int:
        """By identity: a Task is one unit of work (keys ``ParallelExecutionError.failures``)."""
        return id(self)

    def __repr__(self) -> str:
        return f"Task({self.label!r})"

    __str__ = __repr__
