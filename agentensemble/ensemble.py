"""Ensemble: the facade. Validates the whole setup, fills templates, runs the workflow."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentensemble import _memory_wiring as memory_wiring
from agentensemble._base.background_loop import run_sync
from agentensemble._base.validation import check_model, refuse_class
from agentensemble._run import check_setup, execute
from agentensemble.agent import Agent
from agentensemble.context_policy import ContextPolicy
from agentensemble.events import (
    EnsembleEvent,
    EnsembleListener,
)
from agentensemble.hints import (
    CALLER,
    method_hint,
    reject_foreign_names,
    user_line,
)
from agentensemble.limits import UsageLimits
from agentensemble.outputs import EnsembleOutput
from agentensemble.tools.policy import ToolPolicy
from agentensemble.workflows import ParallelErrorStrategy, Workflow
from agentensemble.workflows._review_gates import policy_value
from agentensemble.workflows.prepare import (
    SYNTHESISED_ROLE,
)
from agentensemble.workflows.step import leaf_tasks, step_kind
from agentensemble.workflows.structure import check_structure
from agentensemble.workflows.team import check_team

if TYPE_CHECKING:
    pass


class Ensemble(BaseModel):
    """A team of agents and the tasks they work through."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    step_kind: ClassVar[str] = "ensemble"

    tasks: list[Any] = Field(min_length=1, description="Tasks, Loops, Graphs or Ensembles")
    agents: list[Agent] = Field(default_factory=list)
    workflow: Workflow = Workflow.SEQUENTIAL
    llm: Any = Field(default=None, description="default model for agents without one")
    review_handler: Any = None
    review_policy: Any = "never"
    listeners: list[Any] = Field(default_factory=list)
    verbose: bool = False
    max_concurrency: int | None = Field(default=None, ge=1, description="PARALLEL: tasks at once")
    parallel_error_strategy: ParallelErrorStrategy = ParallelErrorStrategy.FAIL_FAST
    manager_llm: Any = Field(default=None, description="HIERARCHICAL: the manager's model")
    manager_max_iterations: int = Field(default=20, gt=0, description="manager's tool calls")
    max_delegation_depth: int = Field(default=3, ge=0, description="nested peer hand-offs")
    capture: Literal["off", "standard", "full"] = "standard"
    name: str | None = Field(default=None, description="as a step of another ensemble")
    memory: Any = Field(default=None, description="a MemoryStore (agentensemble.memory)")
    knowledge: list[Any] = Field(default_factory=list, description="Knowledge for every task")
    limits: UsageLimits | None = Field(default=None, description="each run's budget (limits.py)")
    context_policy: ContextPolicy | None = Field(
        default=None, description="keeps every agent's conversation inside its model's window"
    )
    tool_policy: ToolPolicy | None = Field(
        default=None,
        description="timeout, retries and max_concurrency for every tool that sets none itself "
        "(an agent's tool_policy goes first)",
    )

    @model_validator(mode="before")
    @classmethod
    def _foreign_names(cls, data: Any) -> Any:
        return reject_foreign_names(cls, data)

    @field_validator("llm", "manager_llm")
    @classmethod
    def _model(cls, value: Any) -> Any:
        return check_model(value)

    @field_validator("agents", mode="before")
    @classmethod
    def _team_members(cls, value: Any) -> Any:
        # a remote agent (an A2AAgent) joins the team as the Agent it makes
        if not isinstance(value, list | tuple):
            return value
        return [
            item.as_team_member() if hasattr(item, "as_team_member") else item for item in value
        ]

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: Any) -> Any:
        return memory_wiring.check_store(value)

    @field_validator("knowledge")
    @classmethod
    def _knowledge(cls, value: list[Any]) -> list[Any]:
        return memory_wiring.check_knowledge(value)

    @field_validator("review_policy")
    @classmethod
    def _policy(cls, value: Any) -> Any:
        policy_value(value)
        return value

    @field_validator("review_handler")
    @classmethod
    def _handler(cls, value: Any) -> Any:
        refuse_class(value, "review_handler")
        methods = (getattr(value, name, None) for name in ("review", "areview"))
        if value is not None and not any(callable(method) for method in methods):
            raise ValueError(
                f"review_handler must have review(request) or areview(request) methods; "
                f"got {type(value).__name__}"
            )
        return value

    @field_validator("listeners")
    @classmethod
    def _listeners(cls, value: list[Any]) -> list[Any]:
        for listener in value:
            refuse_class(listener, "listeners")
            if not isinstance(listener, EnsembleListener):
                raise ValueError(
                    f"a listener needs an on_event(event) method; got {type(listener).__name__}"
                )
        return value

    @field_validator("tasks")
    @classmethod
    def _steps(cls, value: list[Any]) -> list[Any]:
        for position, step in enumerate(value, start=1):
            if step_kind(step) is None:
                raise ValueError(
                    f"tasks item {position} is a {type(step).__name__}; an ensemble's steps are "
                    "Tasks, Loops, Graphs or Ensembles"
                )
        return value

    @model_validator(mode="after")
    def _structure(self) -> Ensemble:
        check_structure(self.tasks, self.workflow)
        check_setup(self)
        check_team(self.workflow, self.agents, leaf_tasks(self.tasks))
        memory_wiring.check_wiring(self.memory, leaf_tasks(self.tasks), self._hierarchical)
        return self

    @property
    def _hierarchical(self) -> bool:
        return self.workflow is Workflow.HIERARCHICAL

    @property
    def label(self) -> str:
        """A short name for messages: the ensemble's name, or ``"ensemble"``."""
        return self.name or "ensemble"

    def __hash__(self) -> int:
        """By identity: an Ensemble may be a step of another one (and named in ``context``)."""
        return id(self)

    # -- running ------------------------------------------------------------------------------

    async def arun(
        self,
        inputs: Mapping[str, Any] | None = None,
        *,
        session: str | None = None,
        limits: UsageLimits | None = None,
    ) -> EnsembleOutput:
        """Run the ensemble. Validation failures raise before any model call.

        ``session``: continue that conversation (kept in ``memory``): each agent sees its
        earlier exchanges of the session, bounded, oldest dropped first (docs/memory.md).
        ``limits``: this run's budget, instead of the ensemble's ``limits`` (docs/limits.md)."""
        return await execute(self, inputs, (), session=session, limits=limits)

    def astream(
        self,
        inputs: Mapping[str, Any] | None = None,
        *,
        session: str | None = None,
        limits: UsageLimits | None = None,
    ) -> AsyncIterator[EnsembleEvent]:
        """Run and yield the run's events as they happen, model text as ``TokenDelta``s; ends
        with ``EnsembleCompleted``. Closing the iterator (``aclose()``, ``contextlib.aclosing``)
        cancels the run; a bare ``break`` leaves that to Python's finalizer."""
        from agentensemble.streaming import astream

        memory_wiring.check_session(session, self.memory, self._hierarchical)
        return astream(partial(execute, self, session=session, limits=limits), inputs)

    def run(
        self,
        inputs: Mapping[str, Any] | None = None,
        *,
        session: str | None = None,
        limits: UsageLimits | None = None,
    ) -> EnsembleOutput:
        """Run synchronously; works from plain scripts and inside a running loop (Jupyter).

        The run goes on this thread's own long-lived event loop (inside a running loop: on one
        background loop shared by such calls), so HTTP connections are reused across runs;
        Ctrl-C cancels it at once. ``session`` and ``limits``: as ``arun``.
        """
        memory_wiring.check_session(session, self.memory, self._hierarchical)
        # warnings raised on the background loop are located at this caller: the run's task
        # starts in a copy of this context (no wrapper coroutine around arun for it)
        token = CALLER.set(user_line())
        try:
            return run_sync(self.arun(inputs, session=session, limits=limits))
        finally:
            CALLER.reset(token)

    if not TYPE_CHECKING:  # type checkers keep reporting unknown attributes as errors

        def __getattr__(self, name: str) -> Any:
            hint = method_hint(type(self).__name__, name)
            if hint is not None:
                raise AttributeError(hint)
            return super().__getattr__(name)

    def __repr__(self) -> str:
        return f"Ensemble(tasks={len(self.tasks)}, workflow={self.workflow.value!r})"

    __str__ = __repr__


__all__ = ["SYNTHESISED_ROLE", "Ensemble"]
