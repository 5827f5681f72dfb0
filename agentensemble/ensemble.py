"""Ensemble: the facade. Validates the whole setup, fills templates, runs the workflow."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import nullcontext
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentensemble import _memory_wiring as memory_wiring
from agentensemble._background_loop import run_on_background_loop
from agentensemble._validation import check_model, refuse_class
from agentensemble.agent import Agent
from agentensemble.errors import ConfigurationError, PromptTemplateError, TaskExecutionError
from agentensemble.events import (
    EnsembleCompleted,
    EnsembleEvent,
    EnsembleFailed,
    EnsembleListener,
    EnsembleStarted,
    EventEmitter,
)
from agentensemble.execution.agent_executor import AgentTask, ExecutionEnv
from agentensemble.hints import (
    check_inputs,
    method_hint,
    reject_foreign_names,
    warn_missing_context,
)
from agentensemble.llm.streaming import EventSink, use_sink
from agentensemble.llm.types import ChatModel
from agentensemble.outputs import EnsembleOutput
from agentensemble.run_context import current_run_id, new_run_id, run_scope
from agentensemble.task import Task
from agentensemble.task_memory import use_run_memory_store
from agentensemble.templates import fill_template, missing_variables
from agentensemble.tools._no_reviewer import (
    approval_without_reviewer,
    gated_source_name,
    gated_tool_names,
)
from agentensemble.tools.resolver import ResolvedTools, ToolResolver
from agentensemble.tools.source import open_tool_sources, tool_sources_in
from agentensemble.workflows import ParallelErrorStrategy, Workflow
from agentensemble.workflows._review_gates import (
    after_review_for,
    is_enabled,
    policy_value,
)
from agentensemble.workflows.base import PreparedTask
from agentensemble.workflows.delegation import Team
from agentensemble.workflows.graph import check_task_graph
from agentensemble.workflows.runners import RunSettings, runner_for
from agentensemble.workflows.team import build_team, check_team, model_resolver, resolve_model

SYNTHESISED_ROLE = "Assistant"
_PASS_A_HANDLER = (
    "Pass Ensemble(review_handler=...), e.g. ConsoleReviewHandler() from agentensemble_review"
)


class Ensemble(BaseModel):
    """A team of agents and the tasks they work through."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    tasks: list[Task] = Field(min_length=1)
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

    @model_validator(mode="after")
    def _structure(self) -> Ensemble:
        self._check_context_order()
        self._check_tools_and_reviews()
        check_team(self.workflow, self.agents, self.tasks)
        memory_wiring.check_wiring(self.memory, self.tasks, self._hierarchical)
        return self

    # -- validation ---------------------------------------------------------------------------

    @property
    def _hierarchical(self) -> bool:
        return self.workflow is Workflow.HIERARCHICAL

    def _check_context_order(self) -> None:
        if self.workflow is not Workflow.SEQUENTIAL:  # any list order; no cycle, none outside
            check_task_graph(self.tasks)
            return
        positions = {id(task): i for i, task in enumerate(self.tasks, start=1)}
        for index, task in enumerate(self.tasks, start=1):
            for dependency in task.context:
                position = positions.get(id(dependency))
                if position is None:
                    raise ValueError(
                        f"task {index} ({task.label!r}) has context task "
                        f"{dependency.label!r}, which is not in this ensemble's tasks"
                    )
                if position >= index:
                    raise ValueError(
                        f"task {index} ({task.label!r}) has context task {dependency.label!r}, "
                        f"which runs later (task {position}); context must "
                        "come from an earlier task"
                    )

    def _resolve_tools(self, task: Task) -> ResolvedTools | None:
        sources = [*(task.agent.tools if task.agent else []), *task.tools]
        return ToolResolver().resolve(sources) if sources else None

    def _check_tools_and_reviews(self) -> list[ResolvedTools | None]:
        """Resolve every task's tools (once) and check them and the reviews; the resolved tools."""
        policy = policy_value(self.review_policy)
        resolved: list[ResolvedTools | None] = []
        for index, task in enumerate(self.tasks, start=1):
            try:
                tools = self._resolve_tools(task)
            except ConfigurationError as error:
                if type(error) is not ConfigurationError or task.agent is None:
                    raise
                # each list passed alone when its model was built: the two lists clash
                raise ConfigurationError(
                    f"task {index} ({task.label!r}): its tools and those of agent "
                    f"{task.agent.role!r} clash: {error}"
                ) from error
            if self.review_handler is None and tools is not None and tools.approval_required:
                raise approval_without_reviewer(
                    f"task {index} ({task.label!r})", gated_tool_names(tools)
                )
            resolved.append(tools)
            lists = [task.agent.tools if task.agent else [], task.tools]
            gated = [source for source in tool_sources_in(lists) if source.asks_for_approval]
            if self.review_handler is None and gated:
                raise approval_without_reviewer(
                    f"task {index} ({task.label!r})", [gated_source_name(s) for s in gated]
                )
            if self.review_handler is not None:
                continue
            if policy != "never":
                raise ConfigurationError(
                    f"review_policy={policy!r} asks for reviews, but the ensemble has no "
                    f"review_handler. {_PASS_A_HANDLER}"
                )
            asking = [
                name for name in ("review", "before_review") if is_enabled(getattr(task, name))
            ]
            if asking:
                raise ConfigurationError(
                    f"task {index} ({task.label!r}) has {asking[0]}=Review.required(...), but "
                    f"the ensemble has no review_handler. {_PASS_A_HANDLER}"
                )
        return resolved

    # -- preparation --------------------------------------------------------------------------

    def _template_texts(self) -> list[str]:
        texts: list[str] = []
        for task in self.tasks:
            texts += [task.description, task.expected_output]
            if task.agent is not None:
                agent = task.agent
                texts += [agent.role, agent.goal, agent.background or ""]
        for agent in self.agents:  # the team: workers and peers are filled from inputs too
            texts += [agent.role, agent.goal, agent.background or ""]
        return texts

    def _prepare(self, inputs: Mapping[str, Any], session: str | None = None) -> list[PreparedTask]:
        """Everything that can fail before the first model call fails here, all at once."""
        self._check_context_order()
        tools_of_task = self._check_tools_and_reviews()  # resolved once per task per run
        missing = missing_variables(self._template_texts(), inputs)
        if missing:
            raise PromptTemplateError(missing)
        models: dict[str, ChatModel] = {}
        policy = policy_value(self.review_policy)
        prepared: list[PreparedTask] = []
        for index, task in enumerate(self.tasks, start=1):
            description = fill_template(task.description, inputs)
            expected = fill_template(task.expected_output, inputs)
            item = PreparedTask(
                task=task,
                description=description,
                expected_output=expected,
                agent_role="handler",
                after_review=after_review_for(task.review, policy, index == len(self.tasks)),
                before_review=task.before_review,
            )
            if task.handler is None and self.workflow is not Workflow.HIERARCHICAL:
                agent = task.agent or Agent(role=SYNTHESISED_ROLE, goal=description)
                if task.agent is None:  # its goal is the filled description: never re-filled
                    role, goal, background = agent.role, agent.goal, None
                else:
                    role = fill_template(agent.role, inputs)
                    goal = fill_template(agent.goal, inputs)
                    background = (
                        fill_template(agent.background, inputs) if agent.background else None
                    )
                item.agent_role = role
                item.agent_task = AgentTask(
                    role=role,
                    goal=goal,
                    background=background,
                    description=description,
                    expected_output=expected,
                    model=self._model_for(agent, index, task, models),
                    response_format=agent.response_format,
                    max_iterations=agent.max_iterations,
                    tools=tools_of_task[index - 1],
                    output_type=task.output_type,
                    task_name=task.name,
                    verbose=agent.verbose,
                    max_output_retries=task.max_output_retries,
                    input_guardrails=task.input_guardrails,
                    output_guardrails=task.output_guardrails,
                    inputs=inputs,
                )
            item.memory = memory_wiring.task_memory(
                role=item.agent_role if task.handler is None else "handler",
                task=task,
                memory=self.memory,
                ensemble_knowledge=self.knowledge,
                session=session,
            )
            if item.agent_task is not None:
                item.agent_task.memory = item.memory
            prepared.append(item)
        return prepared

    def _model_for(
        self, agent: Agent, index: int, task: Task, cache: dict[str, ChatModel]
    ) -> ChatModel:
        chosen = agent.llm if agent.llm is not None else self.llm
        who = "its synthesised agent" if task.agent is None else f"agent {agent.role!r}"
        return resolve_model(chosen, f"task {index} ({task.label!r}): {who}", cache)

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
        """One run. Tool sources (MCP servers) are started first, once for the whole run, and
        closed when it ends, whatever way it ends; bad inputs fail before anything starts."""
        values = check_inputs(inputs)
        missing = missing_variables(self._template_texts(), values)
        if missing:
            raise PromptTemplateError(missing)
        session = memory_wiring.check_session(session, self.memory, self._hierarchical)
        knowledge = memory_wiring.knowledge_of(self.knowledge, self.tasks)
        if knowledge:
            await memory_wiring.sync_knowledge(knowledge, self.memory)
        agents = [*self.agents, *(task.agent for task in self.tasks if task.agent is not None)]
        sources = tool_sources_in(
            [*(agent.tools for agent in agents), *(t.tools for t in self.tasks)]
        )
        async with open_tool_sources(sources):
            with use_run_memory_store(self.memory) if self.memory is not None else nullcontext():
                return await self._run_once(inputs, extra_listeners, stream, session)

    async def _run_once(
        self,
        inputs: Mapping[str, Any] | None,
        extra_listeners: Sequence[EnsembleListener],
        stream: bool,
        session: str | None = None,
    ) -> EnsembleOutput:
        """One run under its own run id (bound for events, logs and errors)."""
        values = check_inputs(inputs)
        prepared = self._prepare(values, session)
        from agentensemble.tracing.recorder import TraceRecorder  # loaded by the first run

        warn_missing_context(self.tasks)
        team = self._team(prepared, values)
        settings = self._run_settings(team)
        with run_scope(new_run_id()) as parent_run_id:
            recorder = TraceRecorder(
                current_run_id(),
                capture=self.capture,
                workflow=self.workflow.value,
                inputs=values,
                parent_run_id=parent_run_id,
            )
            listeners = [recorder, *self.listeners, *extra_listeners]
            if self.verbose:
                from agentensemble.progress import ConsoleProgressListener

                listeners.append(ConsoleProgressListener())
            env = ExecutionEnv(emitter=EventEmitter(listeners), review_handler=self.review_handler)
            env.emitter.emit(
                EnsembleStarted(total_tasks=len(prepared), parent_run_id=parent_run_id)
            )
            if team is not None:
                team.env = env
            try:
                with use_sink(EventSink(env.emitter.emit)) if stream else nullcontext():
                    output = await runner_for(self.workflow, settings).run(prepared, env, values)
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
            output = output.model_copy(
                update={"tool_metrics": env.metrics.snapshot(), "run_id": current_run_id()}
            )
            output = recorder.complete(output)
            env.emitter.emit(EnsembleCompleted(output=output))
            return output

    def _team(self, prepared: list[PreparedTask], inputs: Mapping[str, Any]) -> Team | None:
        """Workers and peers (workflows/team.py); fails before any model call."""
        check_team(self.workflow, self.agents, self.tasks)
        return build_team(
            self.workflow,
            self.agents,
            prepared,
            inputs,
            model_resolver(self.llm, prepared),
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

        The run goes on one long-lived background event loop shared by every ``run()``, so HTTP
        connections are reused across runs; Ctrl-C cancels it at once.
        """
        memory_wiring.check_session(session, self.memory, self._hierarchical)
        return run_on_background_loop(self.arun(inputs, session=session))

    if not TYPE_CHECKING:  # type checkers keep reporting unknown attributes as errors

        def __getattr__(self, name: str) -> Any:
            hint = method_hint(type(self).__name__, name)
            if hint is not None:
                raise AttributeError(hint)
            return super().__getattr__(name)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> Ensemble:
        """An ensemble from a crew file (docs/yaml.md); errors name the file, line and key."""
        from agentensemble.config import ensemble_from_yaml

        return ensemble_from_yaml(path)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ensemble:
        """An ensemble from a crew file's shape given as Python data."""
        from agentensemble.config import ensemble_from_dict

        return ensemble_from_dict(data)

    def __repr__(self) -> str:
        return f"Ensemble(tasks={len(self.tasks)}, workflow={self.workflow.value!r})"

    __str__ = __repr__


__all__ = ["Ensemble"]
