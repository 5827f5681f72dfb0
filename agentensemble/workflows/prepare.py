"""Preparing a run, once, in one place: everything that can fail before the first model call.

``check_inputs_for`` runs first (before tool sources such as MCP servers start): every missing
template variable, every ``for_each`` input missing or not a list. ``prepare_run`` then fills
every template, resolves every agent, model and tool, and builds the run's steps (tasks, loops,
graphs, nested ensembles, fan-outs) with their task-run slots. The runner gets the result and
never checks the user's setup again.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from agentensemble._memory_wiring import scope_texts, task_memory
from agentensemble.agent import Agent
from agentensemble.attachments import Attachment
from agentensemble.errors import ConfigurationError, PromptTemplateError
from agentensemble.execution.agent_executor import AgentTask
from agentensemble.llm.types import ChatModel
from agentensemble.skills._skill import listing
from agentensemble.templates import fill_template, missing_variables, task_attachments
from agentensemble.tools._no_reviewer import (
    approval_without_reviewer,
    gated_source_name,
    gated_tool_names,
)
from agentensemble.tools.base import AgentTool
from agentensemble.tools.resolver import ResolvedTools, ToolResolver
from agentensemble.tools.source import ToolSource, tool_sources_in
from agentensemble.workflows import ParallelErrorStrategy, Workflow
from agentensemble.workflows._review_gates import after_review_for, is_enabled, policy_value
from agentensemble.workflows.base import PreparedRun, PreparedTask
from agentensemble.workflows.step import Step, leaf_tasks, step_kind, walk
from agentensemble.workflows.structure import check_structure
from agentensemble.workflows.task_step import TaskStep
from agentensemble.workflows.team import resolve_model

SYNTHESISED_ROLE = "Assistant"
FAN_OUT_VARIABLES = ("item", "index")
_PASS_A_HANDLER = (
    "Pass Ensemble(review_handler=...), e.g. ConsoleReviewHandler() from agentensemble_review"
)


def team_and_task_agents(ensemble: Any) -> list[Agent]:
    """The agents whose templates a run fills: the team's and every task's (nested too)."""
    agents = list(ensemble.agents)
    for step in walk(ensemble.tasks):
        if step_kind(step) == "ensemble":
            agents += step.agents
        elif step_kind(step) == "task" and step.agent is not None:
            agents.append(step.agent)
    return agents


def _agent_texts(agent: Agent) -> list[str]:
    return [agent.role, agent.goal, agent.background or ""]


def fan_out_value(value: Any) -> Any:
    """How one ``for_each`` item fills ``{item}``: an attachment as itself (named in the text,
    sent with the request), anything else as text (``item_text``)."""
    from agentensemble.workflows.fan_out import item_text

    return value if isinstance(value, Attachment) else item_text(value)


def fan_out_items(task: Any, inputs: Mapping[str, Any]) -> list[Any]:
    """The list ``task.for_each`` names; ConfigurationError when missing or not a list."""
    key = task.for_each
    if key not in inputs:
        raise ConfigurationError(
            f"task {task.label!r} has for_each={key!r}, but the inputs have no {key!r}: pass "
            f"run(inputs={{{key!r}: [...]}})"
        )
    items = inputs[key]
    if not isinstance(items, (list, tuple)):
        raise ConfigurationError(
            f"task {task.label!r} has for_each={key!r}, but inputs[{key!r}] is a "
            f"{type(items).__name__}, not a list"
        )
    return list(items)


def agents_filled_per_item(
    ensemble: Any, tasks: Sequence[Any], agents: Sequence[Agent]
) -> set[int]:
    """The agents (by id) whose role, goal and background are filled once per ``for_each``
    item, so ``{item}`` and ``{index}`` are theirs too: the agents of ``for_each`` tasks that
    do no other task, in a run where nobody delegates (delegation, like a hierarchical
    manager, makes every agent a worker, whose texts are filled from the run's inputs alone).
    ``tasks`` / ``agents``: ``leaf_tasks`` and ``team_and_task_agents`` of the ensemble."""
    per_item = {id(t.agent) for t in tasks if t.for_each is not None and t.agent is not None}
    if not per_item:  # most runs: no fan-out
        return per_item
    if ensemble.workflow is Workflow.HIERARCHICAL or any(a.allow_delegation for a in agents):
        return set()
    per_item -= {id(t.agent) for t in tasks if t.for_each is None and t.agent is not None}
    return per_item


def needed_inputs(ensemble: Any) -> dict[str, str]:
    """Every input a run needs, sorted by name: "list" for a ``for_each`` input, else "text"."""
    needed: dict[str, str] = {}
    tasks = leaf_tasks(ensemble.tasks)
    agents = team_and_task_agents(ensemble)
    per_item = agents_filled_per_item(ensemble, tasks, agents)
    fan_out = dict.fromkeys(FAN_OUT_VARIABLES)
    for task in tasks:
        filled = fan_out if task.for_each is not None else {}
        for name in missing_variables([task.description, task.expected_output], filled):
            needed.setdefault(name, "text")
        if task.for_each is not None:
            needed[task.for_each] = "list"
    for agent in agents:
        filled = fan_out if id(agent) in per_item else {}
        for name in missing_variables(_agent_texts(agent), filled):
            needed.setdefault(name, "text")
    return dict(sorted(needed.items()))


def _missing_error(missing: set[str], tasks: Sequence[Any]) -> PromptTemplateError:
    """The error for ``missing``; when it names ``{item}`` or ``{index}`` in a run with a
    fan-out, it says where those are filled."""
    if not missing.intersection(FAN_OUT_VARIABLES) or all(t.for_each is None for t in tasks):
        return PromptTemplateError(sorted(missing))
    names = ", ".join(f"'{{{name}}}'" for name in sorted(missing))
    return PromptTemplateError(
        sorted(missing),
        f"Missing template variables: {names}. {{item}} and {{index}} are filled only in a "
        "for_each task's description and expected output, and in its agent's role, goal and "
        "background when that agent does no other task and nobody in the run delegates; "
        "elsewhere pass them in inputs=.",
    )


def check_inputs_for(
    ensemble: Any,
    inputs: Mapping[str, Any],
    *,
    tasks: Sequence[Any] | None = None,
    agents: Sequence[Agent] | None = None,
) -> None:
    """Every missing template variable in one PromptTemplateError; a bad ``for_each`` input.
    ``tasks`` / ``agents``: ``leaf_tasks`` and ``team_and_task_agents`` of the ensemble, when
    the caller has them already."""
    tasks = leaf_tasks(ensemble.tasks) if tasks is None else tasks
    agents = team_and_task_agents(ensemble) if agents is None else agents
    texts: list[str] = []
    per_item_texts: list[str] = []
    for task in tasks:
        if task.for_each is not None:
            fan_out_items(task, inputs)
            per_item_texts += (task.description, task.expected_output, *scope_texts(task.memory))
        else:
            texts += (task.description, task.expected_output, *scope_texts(task.memory))
    # each agent's texts are checked once (an agent doing several tasks is listed once per
    # task): against the inputs with item and index when it is filled per item, else alone
    per_item = agents_filled_per_item(ensemble, tasks, agents)
    for agent in agents:
        (per_item_texts if id(agent) in per_item else texts).extend(_agent_texts(agent))
    missing = set(missing_variables(texts, inputs))
    if per_item_texts:
        with_item = {**dict.fromkeys(FAN_OUT_VARIABLES), **inputs}
        missing |= set(missing_variables(per_item_texts, with_item))
    if missing:
        raise _missing_error(missing, tasks)


# A task's resolved tools, kept between runs while its tool lists hold the same objects (by
# identity): resolving 1,000 tools on every run was most of such a run. A list holding a tool
# source (its tools change as it starts and stops) or an AgentTool instance (its name and
# description are plain attributes) is resolved on every run. Keyed by the task's id, with a
# weak reference to the task (a WeakKeyDictionary compared the task with itself through
# pydantic's field-by-field ``__eq__`` on every lookup); the entry goes when the task does.
_Kept = tuple["weakref.ref[Any]", tuple[object, ...], ResolvedTools]
_resolved: dict[int, _Kept] = {}


def _forget(key: int, ref: weakref.ref[Any]) -> None:
    kept = _resolved.get(key)
    if kept is not None and kept[0] is ref:  # not a newer task that took the same id
        _resolved.pop(key, None)


def _resolved_tools(task: Any, sources: list[object]) -> ResolvedTools:
    kept = _resolved.get(id(task))  # only lists without a source or an AgentTool are kept
    if (
        kept is not None
        and kept[0]() is task
        and len(kept[1]) == len(sources)
        and all(old is new for old, new in zip(kept[1], sources, strict=True))
    ):
        return kept[2]
    tools = ToolResolver().resolve(sources)
    if not any(isinstance(source, (ToolSource, AgentTool)) for source in sources):
        key = id(task)
        ref = weakref.ref(task, lambda dead, key=key: _forget(key, dead))  # type: ignore[misc]
        _resolved[key] = (ref, tuple(sources), tools)
    return tools


def resolve_tools(tasks: Sequence[Any], review_handler: Any, review_policy: Any) -> dict[int, Any]:
    """Resolve every task's tools (once) and check them and the reviews; by task identity."""
    policy = policy_value(review_policy)
    resolved: dict[int, ResolvedTools | None] = {}
    for index, task in enumerate(tasks, start=1):
        sources = [*(task.agent.tools if task.agent else []), *task.tools]
        try:
            tools = _resolved_tools(task, sources) if sources else None
        except ConfigurationError as error:
            if type(error) is not ConfigurationError or task.agent is None:
                raise
            # each list passed alone when its model was built: the two lists clash
            raise ConfigurationError(
                f"task {index} ({task.label!r}): its tools and those of agent "
                f"{task.agent.role!r} clash: {error}"
            ) from error
        if review_handler is None and tools is not None and tools.approval_required:
            raise approval_without_reviewer(
                f"task {index} ({task.label!r})", gated_tool_names(tools)
            )
        resolved[id(task)] = tools
        lists = [task.agent.tools if task.agent else [], task.tools]
        gated = [source for source in tool_sources_in(lists) if source.asks_for_approval]
        if review_handler is None and gated:
            raise approval_without_reviewer(
                f"task {index} ({task.label!r})", [gated_source_name(s) for s in gated]
            )
        if review_handler is not None:
            continue
        if policy != "never":
            raise ConfigurationError(
                f"review_policy={policy!r} asks for reviews, but the ensemble has no "
                f"review_handler. {_PASS_A_HANDLER}"
            )
        asking = [name for name in ("review", "before_review") if is_enabled(getattr(task, name))]
        if asking:
            raise ConfigurationError(
                f"task {index} ({task.label!r}) has {asking[0]}=Review.required(...), but "
                f"the ensemble has no review_handler. {_PASS_A_HANDLER}"
            )
    return resolved


def final_task(step: Any) -> Any:
    """The task whose output ends ``step`` (reviewed by ``review_policy="after_last_task"``):
    a loop's last body task (each iteration), a nested ensemble's last; None for a graph."""
    kind = step_kind(step)
    if kind == "loop":
        return final_task(step.body[-1])
    if kind == "ensemble":
        return final_task(step.tasks[-1])
    return step if kind == "task" else None


class _Preparation:
    """One run's preparation: models resolved once per name, tools once per task."""

    def __init__(
        self, ensemble: Any, inputs: Mapping[str, Any], session: str | None = None
    ) -> None:
        self.inputs = inputs
        self.memory = ensemble.memory
        self.knowledge = list(ensemble.knowledge)
        self.session = session
        self.tasks = leaf_tasks(ensemble.tasks)
        self.number = {id(task): i for i, task in enumerate(self.tasks, start=1)}
        self.tools = resolve_tools(self.tasks, ensemble.review_handler, ensemble.review_policy)
        self.policy = policy_value(ensemble.review_policy)
        self.hierarchical = ensemble.workflow is Workflow.HIERARCHICAL
        self.last = final_task(ensemble.tasks[-1])
        self.models: dict[str, ChatModel] = {}
        self.prepared: list[PreparedTask] = []

    def steps(self, steps: Sequence[Any], llm: Any, limit: int | None) -> list[Step]:
        return [self.step(step, llm, limit) for step in steps]

    def step(self, obj: Any, llm: Any, limit: int | None) -> Step:
        # the kinds a plain sequential run never uses load on first use, not with the package
        kind = step_kind(obj)
        if kind == "loop":
            from agentensemble.workflows.loop import LoopStep

            return LoopStep(obj, self.steps(obj.body, llm, limit))
        if kind == "graph":
            from agentensemble.workflows.graph import GraphStep

            states = {name: self.step(s, llm, limit) for name, s in obj.states.items()}
            return GraphStep(obj, states)
        if kind == "ensemble":
            from agentensemble.workflows.nested import EnsembleStep

            inner_llm = obj.llm if obj.llm is not None else llm
            inner_limit = obj.max_concurrency or limit
            return EnsembleStep(
                obj,
                self.steps(obj.tasks, inner_llm, inner_limit),
                parallel=obj.workflow is Workflow.PARALLEL,
                limit=obj.max_concurrency,
                strategy=ParallelErrorStrategy(obj.parallel_error_strategy),
            )
        if obj.for_each is None:
            return TaskStep(self.task(obj, llm, self.inputs))
        from agentensemble.workflows.fan_out import FanOutStep

        items = [
            self.task(obj, llm, {**self.inputs, "item": fan_out_value(value), "index": index})
            for index, value in enumerate(fan_out_items(obj, self.inputs))
        ]
        return FanOutStep(obj, items, limit)

    def task(self, task: Any, llm: Any, inputs: Mapping[str, Any]) -> PreparedTask:
        index = self.number[id(task)]
        description = fill_template(task.description, inputs)
        expected = fill_template(task.expected_output, inputs)
        item = PreparedTask(
            task=task,
            description=description,
            expected_output=expected,
            agent_role="handler",
            after_review=after_review_for(task.review, self.policy, task is self.last),
            before_review=task.before_review,
            inputs=inputs if inputs is not self.inputs else None,
        )
        if task.handler is None and not self.hierarchical:
            agent = task.agent or Agent(role=SYNTHESISED_ROLE, goal=description)
            if task.agent is None:  # its goal is the filled description: never re-filled
                role, goal, background = agent.role, agent.goal, None
            else:
                role = fill_template(agent.role, inputs)
                goal = fill_template(agent.goal, inputs)
                background = fill_template(agent.background, inputs) if agent.background else None
            instructions = agent.instructions
            if isinstance(instructions, str):
                instructions = fill_template(instructions, inputs)
            chosen = agent.llm if agent.llm is not None else llm
            who = "its synthesised agent" if task.agent is None else f"agent {agent.role!r}"
            item.agent_role = role
            item.agent_task = AgentTask(
                role=role,
                goal=goal,
                background=background,
                description=description,
                expected_output=expected,
                model=resolve_model(chosen, f"task {index} ({task.label!r}): {who}", self.models),
                response_format=agent.response_format,
                max_iterations=agent.max_iterations,
                tools=self.tools[id(task)],
                output_type=task.output_type,
                task_name=task.name,
                verbose=agent.verbose,
                max_output_retries=task.max_output_retries,
                input_guardrails=task.input_guardrails,
                output_guardrails=task.output_guardrails,
                inputs=inputs,
                instructions=instructions,
                skills=listing(agent.skills),
                attachments=task_attachments(task, inputs),
                context_policy=agent.context_policy,
                tool_policy=agent.tool_policy,
            )
        item.memory = task_memory(
            role=item.agent_role,
            task=task,
            memory=self.memory,
            ensemble_knowledge=self.knowledge,
            session=self.session,
            inputs=inputs,
        )
        if item.agent_task is not None:
            item.agent_task.memory = item.memory
        self.prepared.append(item)
        return item


def prepare_run(
    ensemble: Any,
    inputs: Mapping[str, Any],
    *,
    inputs_checked: bool = False,
    session: str | None = None,
) -> PreparedRun:
    """The whole run, prepared: steps with their slots, every task run resolved. The structure
    is checked again: context lists may have changed since the ensemble was built.
    ``inputs_checked``: ``check_inputs_for`` already ran on these inputs (not again);
    ``session``: the conversation each task's memory continues (``run(session=...)``)."""
    check_structure(ensemble.tasks, ensemble.workflow)
    if not inputs_checked:
        check_inputs_for(ensemble, inputs)
    preparation = _Preparation(ensemble, inputs, session)
    steps = preparation.steps(ensemble.tasks, ensemble.llm, ensemble.max_concurrency)
    return PreparedRun(
        steps=steps,
        tasks=preparation.prepared,
        total=sum(step.capacity for step in steps),
    )


__all__ = [
    "SYNTHESISED_ROLE",
    "agents_filled_per_item",
    "check_inputs_for",
    "fan_out_items",
    "needed_inputs",
    "prepare_run",
    "resolve_tools",
    "team_and_task_agents",
]
