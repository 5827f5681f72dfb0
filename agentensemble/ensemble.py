"""Ensemble: the facade. Validates the whole setup, fills templates, runs the workflow."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import nullcontext
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentensemble import _memory_wiring as memory_wiring
from agentensemble._background_loop import run_sync
from agentensemble._validation import check_model, refuse_class
from agentensemble.agent import Agent
from agentensemble.errors import TaskExecutionError
from agentensemble.events import (
    EnsembleCompleted,
    EnsembleEvent,
    EnsembleFailed,
    EnsembleListener,
    EnsembleStarted,
    EventEmitter,
)
from agentensemble.execution.agent_executor import ExecutionEnv
from agentensemble.hints import (
    CALLER,
    check_inputs,
    method_hint,
    reject_foreign_names,
    user_line,
    warn_missing_context,
)
from agentensemble.llm.streaming import EventSink, use_sink
from agentensemble.outputs import EnsembleOutput
from agentensemble.run_context import current_run_id, new_run_id, run_scope
from agentensemble.task_memory import use_run_memory_store
from agentensemble.tools.source import open_tool_sources, tool_sources_in
from agentensemble.workflows import ParallelErrorStrategy, Workflow
from agentensemble.workflows._review_gates import policy_value
from agentensemble.workflows.base import PreparedRun, WorkflowRunner
from agentensemble.workflows.prepare import (
    SYNTHESISED_ROLE,
    check_inputs_for,
    prepare_run,
    resolve_tools,
    team_and_task_agents,
)
from agentensemble.workflows.runners import RunSettings, runner_for
from agentensemble.workflows.step import leaf_tasks, step_kind
from agentensemble.workflows.structure import check_structure
from agentensemble.workflows.team import build_team, check_team, model_resolver, resolve_model

if TYPE_CHECKING:
    from agentensemble.workflows.delegation import Team


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
        self._check_tools_and_reviews()
        check_team(self.workflow, self.agents, leaf_tasks(self.tasks))
        memory_wiring.check_wiring(self.memory, leaf_tasks(self.tasks), self._hierarchical)
        return self

    @property
    def _hierarchical(self) -> bool:
        return self.workflow is Workflow.HIERARCHICAL

    def _check_tools_and_reviews(self) -> None:
        """Every task's tools resolve and every gate has a reviewer (also asked again by servers
        before they serve an ensemble that may have changed since it was built)."""
        resolve_tools(leaf_tasks(self.tasks), self.review_handler, self.review_policy)

    @property
    def label(self) -> str:
        """A short name for messages: the ensemble's name, or ``"ensemble"``."""
        return self.name or "ensemble"

    def __hash__(self) -> int:
        """By identity: an Ensemble may be a step of another one (and named in ``context``)."""
        return id(self)

    # -- running ------------------------------------------------------------------------------

    async def arun(
        self, inputs: Mapping[str, Any] | None = None, *, session: str | None = None
    ) -> EnsembleOutput:
        """Run the ensemble. Validation failures raise before any model call.

        ``session``: continue that conversation (kept in ``memory``): each agent sees its
        earlier exchanges of the session, bounded, oldest dropped first (docs/memory.md)."""
        return await self._execute(inputs, (), session=session)

    def astream(
        self, inputs: Mapping[str, Any] | None = None, *, session: str | None = None
    ) -> AsyncIterator[EnsembleEvent]:
        """Run and yield the run's events as they happen, model text as ``TokenDelta``s; ends
        with ``EnsembleCompleted``. Closing the iterator (``aclose()``, ``contextlib.aclosing``)
        cancels the run; a bare ``break`` leaves that to Python's finalizer."""
        from agentensemble.streaming import astream

        memory_wiring.check_session(session, self.memory, self._hierarchical)
        return astream(partial(self._execute, session=session), inputs)

    async def _execute(
        self,
        inputs: Mapping[str, Any] | None,
        extra_listeners: Sequence[EnsembleListener],
        stream: bool = False,
        *,
        session: str | None = None,
    ) -> EnsembleOutput:
        """One run. Bad inputs fail before anything starts; tool sources (MCP servers) are
        started next, once for the whole run, and closed when it ends, whatever way it ends;
        then the run is prepared, once (``workflows/prepare.py``), and handed to its runner.
        A plain run's preparation and runner are kept from the ensemble's second run on, while
        nothing they were made from changes (``workflows/_reuse.py``)."""
        from agentensemble.workflows._reuse import keep_run, reused_run  # loaded by a first run

        values = check_inputs(inputs)
        kept = reused_run(self, values, session)
        if kept is not None:  # the same plain run as last time, checked and prepared then
            self._warn_missing_context()
            prepared, runner = kept
            return await self._run_prepared(prepared, runner, None, values, extra_listeners, stream)
        agents = team_and_task_agents(self)
        tasks = leaf_tasks(self.tasks)
        check_inputs_for(self, values, tasks=tasks, agents=agents)
        session = memory_wiring.check_session(session, self.memory, self._hierarchical)
        knowledge = memory_wiring.knowledge_of(self.knowledge, tasks)
        if knowledge:
            await memory_wiring.sync_knowledge(knowledge, self.memory)
        sources = tool_sources_in([*(agent.tools for agent in agents), *(t.tools for t in tasks)])
        async with open_tool_sources(sources):
            prepared = prepare_run(self, values, inputs_checked=True, session=session)
            self._warn_missing_context()
            team = self._team(prepared, values)
            runner = runner_for(self.workflow, self._run_settings(team))
            if not sources and team is None:
                keep_run(self, values, session, (prepared, runner))
            with use_run_memory_store(self.memory) if self.memory is not None else nullcontext():
                return await self._run_prepared(
                    prepared, runner, team, values, extra_listeners, stream
                )

    def _warn_missing_context(self) -> None:
        warn_missing_context([t for t in self.tasks if step_kind(t) == "task"])

    async def _run_prepared(
        self,
        prepared: PreparedRun,
        runner: WorkflowRunner,
        team: Team | None,
        values: dict[str, Any],
        extra_listeners: Sequence[EnsembleListener],
        stream: bool,
    ) -> EnsembleOutput:
        """One prepared run under its own run id (bound for events, logs and errors)."""
        from agentensemble.tracing.recorder import TraceRecorder  # loaded by the first run

        with run_scope(new_run_id()) as parent_run_id:
            recorder = TraceRecorder(
                current_run_id(),
                capture=self.capture,
                workflow=self.workflow._value_,  # ``.value`` is a Python property: two calls
                inputs=values,
                parent_run_id=parent_run_id,
            )
            listeners = [recorder, *self.listeners, *extra_listeners]
            if self.verbose:
                from agentensemble.progress import ConsoleProgressListener

                listeners.append(ConsoleProgressListener())
            env = ExecutionEnv(emitter=EventEmitter(listeners), review_handler=self.review_handler)
            env.emitter.emit(
                EnsembleStarted(total_tasks=prepared.total, parent_run_id=parent_run_id)
            )
            if team is not None:
                team.env = env
            try:
                if stream:
                    with use_sink(EventSink(env.emitter.emit)):
                        output = await runner.run(prepared, env, values)
                else:  # no ``nullcontext()``: three Python calls a run for nothing
                    output = await runner.run(prepared, env, values)
            except TaskExecutionError as error:
                error.trace = recorder.fail(error)
                env.emitter.emit(EnsembleFailed(error))
                raise
            except (asyncio.CancelledError, KeyboardInterrupt) as stopped:
                # cancelled, Ctrl-C, or a stream left early: listeners (a web console, spans)
                # learn the run ended instead of showing it running forever
                recorder.fail(stopped)
                env.emitter.emit(EnsembleFailed(stopped))
                raise
            output = recorder.complete(
                output, tool_metrics=env.metrics.snapshot(), run_id=current_run_id()
            )
            env.emitter.emit(EnsembleCompleted(output=output))
            return output

    def _team(self, prepared: PreparedRun, inputs: Mapping[str, Any]) -> Team | None:
        """Workers and peers (workflows/team.py); fails before any model call."""
        return build_team(
            self.workflow,
            self.agents,
            prepared.tasks,
            inputs,
            model_resolver(self.llm, prepared.tasks),
            self.max_delegation_depth,
            has_reviewer=self.review_handler is not None,
        )

    def _run_settings(self, team: Team | None) -> RunSettings:
        manager = None
        if self.workflow is Workflow.HIERARCHICAL and team is not None:
            from agentensemble.workflows.hierarchical import ManagerSetup

            chosen = self.manager_llm if self.manager_llm is not None else self.llm
            manager = ManagerSetup(
                team=team,
                model=resolve_model(chosen, "the hierarchical manager (manager_llm)", {}),
                max_iterations=self.manager_max_iterations,
            )
        return RunSettings(
            max_concurrency=self.max_concurrency,
            parallel_error_strategy=self.parallel_error_strategy,
            manager=manager,
        )

    def run(
        self, inputs: Mapping[str, Any] | None = None, *, session: str | None = None
    ) -> EnsembleOutput:
        """Run synchronously; works from plain scripts and inside a running loop (Jupyter).

        The run goes on this thread's own long-lived event loop (inside a running loop: on one
        background loop shared by such calls), so HTTP connections are reused across runs;
        Ctrl-C cancels it at once. ``session``: as ``arun``.
        """
        memory_wiring.check_session(session, self.memory, self._hierarchical)
        # warnings raised on the background loop are located at this caller: the run's task
        # starts in a copy of this context (no wrapper coroutine around arun for it)
        token = CALLER.set(user_line())
        try:
            return run_sync(self.arun(inputs, session=session))
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
