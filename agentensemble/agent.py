"""Agent: who does the work — a role, a goal, tools and a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentensemble._base.validation import check_instructions, check_model, require_text
from agentensemble.context_policy import ContextPolicy
from agentensemble.hints import reject_foreign_names
from agentensemble.tools.policy import ToolPolicy


def check_tools(tools: Sequence[Any]) -> list[Any]:
    """Resolve the tools now so bad names fail the model's construction.

    A bad name raises ToolNameError (a ValueError, reported by pydantic on the field); an object
    that is no tool, or two tools sharing a name, raise ConfigurationError as the resolver does.
    """
    tools = list(tools)
    if tools:
        from agentensemble.tools.resolver import ToolResolver  # only when given: import stays cheap

        ToolResolver().resolve(tools)
    return tools


def check_skills(value: list[Any]) -> list[Any]:
    """An agent's ``skills``: each a ``Skill`` or a folder path, read now; names unique."""
    from agentensemble.skills._skill import as_skill  # reads files only when skills are given

    skills = [as_skill(item) for item in value]
    seen: set[str] = set()
    for skill in skills:
        if skill.name in seen:
            raise ValueError(f"two skills are named {skill.name!r}; skill names must be unique")
        seen.add(skill.name)
    return skills


class Agent(BaseModel):
    """An LLM-backed worker. ``role``, ``goal`` and ``background`` may use ``{variables}``."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    role: str
    goal: str
    background: str | None = None
    tools: list[Any] = Field(default_factory=list)
    llm: Any = Field(default=None, description="model name, LLM or ChatModel")
    max_iterations: int = Field(default=25, ge=1, description="max tool calls in one task")
    response_format: str | None = None
    verbose: bool = Field(
        default=False, description="print this agent's prompts and answers on stderr"
    )
    allow_delegation: bool = Field(
        default=False, description="may hand work to the ensemble's other agents"
    )
    instructions: Any = Field(
        default=None,
        description="text after the system prompt, or a function (RunContext) -> str, sync or "
        "async, called at each task start",
    )
    skills: list[Any] = Field(
        default_factory=list,
        description="SKILL.md folders (Skill objects or folder paths): their names and "
        "descriptions are in the prompt, the rest is read with load_skill and read_skill_file",
    )
    context_policy: ContextPolicy | None = Field(
        default=None,
        description="keeps this agent's conversations inside its model's window (instead of "
        "the ensemble's)",
    )
    tool_policy: ToolPolicy | None = Field(
        default=None,
        description="timeout, retries and max_concurrency for this agent's tools that do not "
        "set their own (over the ensemble's, setting by setting)",
    )

    @model_validator(mode="before")
    @classmethod
    def _foreign_names(cls, data: Any) -> Any:
        return reject_foreign_names(cls, data)

    @field_validator("role", "goal")
    @classmethod
    def _non_blank(cls, value: str, info: Any) -> str:
        return require_text(value, info.field_name)

    @field_validator("llm")
    @classmethod
    def _model(cls, value: Any) -> Any:
        return check_model(value)

    @field_validator("instructions")
    @classmethod
    def _instructions(cls, value: Any) -> Any:
        return check_instructions(value)

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: list[Any]) -> list[Any]:
        return check_tools(value)

    @field_validator("skills")
    @classmethod
    def _skills(cls, value: list[Any]) -> list[Any]:
        return check_skills(value)

    @model_validator(mode="after")
    def _skill_tools(self) -> Agent:
        """An agent with skills gets the tools that read them (once, however often validated)."""
        if self.skills:
            from agentensemble.skills._tools import skill_tools, without_skill_tools

            self.tools = [*without_skill_tools(self.tools), *skill_tools(self.skills)]
        return self

    def __repr__(self) -> str:
        return f"Agent(role={self.role!r})"

    __str__ = __repr__
