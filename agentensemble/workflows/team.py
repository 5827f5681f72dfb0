"""The team: what ``Ensemble(agents=[...])`` means, checked at construction, resolved per run.

The team is ``Ensemble.agents`` followed by the agents of the tasks (each agent once). It is
who the hierarchical manager delegates to, and who an ``Agent(allow_delegation=True)`` may ask
(every team member but itself). In SEQUENTIAL and PARALLEL, ``agents`` does not assign work:
tasks are done by their own agents; ``agents`` only adds peers that delegating agents can ask.
A remote agent (an ``A2AAgent`` in ``agents``: an ``Agent`` with ``ask_remote``) is a member
that only answers delegations: it does no task of its own and takes none of our tools.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from agentensemble.agent import Agent
from agentensemble.errors import ConfigurationError, ModelSettingsError, PromptTemplateError
from agentensemble.execution.agent_executor import AgentTask
from agentensemble.llm.types import ChatModel
from agentensemble.skills._skill import listing
from agentensemble.task import Task
from agentensemble.templates import fill_template, missing_variables
from agentensemble.tools._no_reviewer import approval_without_reviewer, gated_tool_names
from agentensemble.tools.resolver import ToolResolver
from agentensemble.workflows import Workflow
from agentensemble.workflows.base import PreparedTask

if TYPE_CHECKING:
    from agentensemble.workflows.delegation import Team, Worker

MANAGER_ROLE = "Manager"


def team_agents(agents: Sequence[Agent], tasks: Sequence[Task]) -> list[Agent]:
    """``agents`` then the tasks' agents, each object once, in that order."""
    seen: set[int] = set()
    team: list[Agent] = []
    for agent in [*agents, *(task.agent for task in tasks if task.agent is not None)]:
        if id(agent) not in seen:
            seen.add(id(agent))
            team.append(agent)
    return team


def unassigned_tasks(
    workflow: Workflow, agents: Sequence[Agent], tasks: Sequence[Any]
) -> tuple[list[tuple[int, Any]], list[Agent]]:
    """The CrewAI habit: tasks with no agent (and no handler) beside listed agents no task uses,
    in a workflow where ``agents`` assigns nothing. Returns ([(number, task)], [idle agents]);
    both empty when the habit is not there (a peer for delegating agents is not idle)."""
    if workflow is Workflow.HIERARCHICAL or not agents:
        return [], []
    if any(agent.allow_delegation for agent in team_agents(agents, tasks)):
        return [], []
    used = {id(getattr(task, "agent", None)) for task in tasks}
    idle = [agent for agent in agents if id(agent) not in used]
    orphans = [
        (number, task)
        for number, task in enumerate(tasks, start=1)
        if isinstance(task, Task) and task.agent is None and task.handler is None
    ]
    return (orphans, idle) if orphans and idle else ([], [])


def _check_assigned(workflow: Workflow, agents: Sequence[Agent], tasks: Sequence[Any]) -> None:
    orphans, idle = unassigned_tasks(workflow, agents, tasks)
    if not orphans:
        return
    number, task = orphans[0]
    roles = ", ".join(repr(agent.role) for agent in idle)
    raise ValueError(
        f"task {number} ({task.label!r}) has no agent, and agents=[...] lists {roles}, which "
        f"no task uses: in workflow {workflow.value.upper()}, agents=[...] hands out no work "
        "(tasks without an agent would run as a synthesised 'Assistant' with no tools). Give "
        "each task its agent: Task(..., agent=researcher); or let a manager hand the tasks "
        "out: Ensemble(..., workflow=Workflow.HIERARCHICAL, manager_llm=...)"
    )


def check_team(workflow: Workflow, agents: Sequence[Agent], tasks: Sequence[Task]) -> None:
    """The rules of delegation and of the hierarchical workflow (ValueError naming the rule)."""
    _check_assigned(workflow, agents, tasks)
    _check_remote(workflow, tasks)
    team = team_agents(agents, tasks)
    hierarchical = workflow is Workflow.HIERARCHICAL
    if hierarchical:
        _check_hierarchical(team, tasks)
    if hierarchical or any(agent.allow_delegation for agent in team):
        seen: dict[str, str] = {}
        for agent in team:
            key = agent.role.strip().casefold()
            if key in seen:
                raise ValueError(
                    f"two agents share the role {seen[key]!r} / {agent.role!r} (roles are "
                    "compared ignoring case); delegation picks an agent by its role, so each "
                    "role must be unique"
                )
            seen[key] = agent.role


def remote_of(agent: Any) -> Callable[[str], Awaitable[str]] | None:
    """A remote team member's way to answer (``ask_remote``), else None."""
    ask = getattr(agent, "ask_remote", None)
    return ask if callable(ask) else None


def _check_remote(workflow: Workflow, tasks: Sequence[Task]) -> None:
    for index, task in enumerate(tasks, start=1):
        if task.agent is None or remote_of(task.agent) is None:
            continue
        where = f"task {index} ({task.label!r})"
        if workflow is not Workflow.HIERARCHICAL:
            raise ValueError(
                f"{where}: its agent {task.agent.role!r} is a remote agent, which answers "
                "delegations only; list it in Ensemble(agents=[...]) of a HIERARCHICAL "
                "ensemble (or beside an agent with allow_delegation=True), or give it as a "
                "tool: Agent(tools=[A2AAgent(...)])"
            )
        if task.tools:
            raise ValueError(
                f"{where} has tools, but its agent {task.agent.role!r} is a remote agent, "
                "which cannot use our tools; give the tools to a local agent"
            )


def _check_hierarchical(team: Sequence[Agent], tasks: Sequence[Task]) -> None:
    if not team:
        raise ValueError(
            "workflow HIERARCHICAL needs workers for the manager: pass Ensemble(agents=[...]) "
            "or give tasks an agent"
        )
    for agent in team:
        if agent.role.strip().casefold() == MANAGER_ROLE.casefold():
            raise ValueError(
                f"the worker role {agent.role!r} is reserved for the hierarchical manager; "
                "give that agent another role"
            )
    for index, task in enumerate(tasks, start=1):
        where = f"task {index} ({task.label!r})"
        if task.handler is not None:
            raise ValueError(
                f"{where} has a handler, but in workflow HIERARCHICAL the manager delegates "
                "every task to a worker agent; handler tasks are not allowed"
            )
        if task.tools and task.agent is None:
            raise ValueError(
                f"{where} has tools but no agent; in workflow HIERARCHICAL a task's tools go "
                "to its agent's worker, so give the task an agent"
            )
        if task.before_review is not None and task.before_review.enabled:
            raise ValueError(
                f"{where} has before_review, which workflow HIERARCHICAL does not apply (the "
                "manager plans all tasks at once); review the final answer with review= or "
                "review_policy instead"
            )
        ignored = [
            name
            for name, set_here in (
                ("input_guardrails", bool(task.input_guardrails)),
                ("output_guardrails", bool(task.output_guardrails)),
                ("review", index < len(tasks) and _enabled(task.review)),
            )
            if set_here
        ]
        if ignored:
            raise ValueError(
                f"{where} has {', '.join(ignored)}, which workflow HIERARCHICAL does not apply "
                "(the manager decides what each worker does); use workflow SEQUENTIAL or "
                "PARALLEL for checks per task, or review the final answer with the last task's "
                "review="
            )


def _enabled(review: object) -> bool:
    return review is not None and bool(getattr(review, "enabled", False))


ModelFor = Callable[[Agent], ChatModel]


def model_resolver(default: Any, prepared: Sequence[PreparedTask]) -> ModelFor:
    """An agent's model for this run: the one its task already resolved, else its ``llm`` or
    ``default`` (a model name becomes one ``LLM`` per name)."""
    known = {
        id(item.task.agent): item.agent_task.model
        for item in prepared
        if item.task.agent is not None and item.agent_task is not None
    }
    by_name: dict[str, ChatModel] = {}

    def model_for(agent: Agent) -> ChatModel:
        if id(agent) in known:
            return known[id(agent)]
        return resolve_model(
            agent.llm if agent.llm is not None else default, f"agent {agent.role!r}", by_name
        )

    return model_for


def resolve_model(chosen: Any, who: str, by_name: dict[str, ChatModel]) -> ChatModel:
    """``chosen`` as a ChatModel; ConfigurationError naming ``who`` when there is none."""
    if chosen is None:
        raise ModelSettingsError(
            f"{who} has no model. Set Agent(llm=...) or Ensemble(llm=...) to a model name such "
            "as 'openai/gpt-4o-mini', an LLM or a ChatModel"
        )
    if isinstance(chosen, str):
        from agentensemble.llm.litellm_model import LLM  # litellm itself stays lazy

        if chosen not in by_name:
            by_name[chosen] = LLM(model=chosen)
        chosen = by_name[chosen]
    # no LLM exists before its module is loaded: a run on a ChatModel never imports it (the
    # model classes, retries, rate limits and tenacity: ~40 ms of CPU on the first run)
    llm_module = sys.modules.get("agentensemble.llm.litellm_model")
    chain_module = sys.modules.get("agentensemble.llm.fallback")  # a chain: each member
    if (llm_module is not None and isinstance(chosen, llm_module.LLM)) or (
        chain_module is not None and isinstance(chosen, chain_module.FallbackModel)
    ):
        try:  # a missing key or a bad base URL fails here, before any model call
            chosen.check_settings()
        except ConfigurationError as error:
            missing_key = getattr(error, "missing_key", False)
            raise ModelSettingsError(f"{who}: {error}", missing_key=missing_key) from None
    model: ChatModel = chosen
    return model


def build_team(
    workflow: Workflow,
    agents: Sequence[Agent],
    prepared: Sequence[PreparedTask],
    inputs: Mapping[str, Any],
    model_for: ModelFor,
    max_depth: int,
    has_reviewer: bool,
) -> Team | None:
    """Resolve the team for this run (None when nobody delegates and no manager runs).

    Gives each delegating agent — on its tasks and as a worker — a ``delegate_to_agent`` tool.
    Raises PromptTemplateError / ConfigurationError before any model call.
    """
    tasks = [item.task for item in prepared]
    members = team_agents(agents, tasks)
    hierarchical = workflow is Workflow.HIERARCHICAL
    if not hierarchical and not any(agent.allow_delegation for agent in members):
        return None
    texts = [text for a in members for text in (a.role, a.goal, a.background or "")]
    missing = missing_variables(texts, inputs)
    if missing:
        raise PromptTemplateError(missing)
    workers = [_worker(agent, tasks, inputs, model_for, hierarchical) for agent in members]
    for worker in workers:
        tools = worker.agent_task.tools
        if not has_reviewer and tools is not None and tools.approval_required:
            raise approval_without_reviewer(
                f"agent {worker.role!r} (as a worker)", gated_tool_names(tools)
            )
    from agentensemble.workflows.delegation import DelegateTool, Team  # only when delegating

    team = Team(workers, max_depth)
    for agent, worker in zip(members, workers, strict=True):
        if agent.allow_delegation and len(workers) > 1:
            sources = [*_sources(agent, tasks, hierarchical), DelegateTool(team, worker.role)]
            worker.agent_task.tools = ToolResolver().resolve(sources)
    for item in prepared:
        owner = item.task.agent
        if owner is not None and owner.allow_delegation and item.agent_task and len(workers) > 1:
            asker = item.agent_task.role
            sources = [*owner.tools, *item.task.tools, DelegateTool(team, asker)]
            item.agent_task = replace(item.agent_task, tools=ToolResolver().resolve(sources))
    return team


def _sources(agent: Agent, tasks: Sequence[Task], hierarchical: bool) -> list[Any]:
    """A worker's tools: its own, plus (HIERARCHICAL) those of the tasks assigned to it."""
    extra = [t for task in tasks if task.agent is agent for t in task.tools] if hierarchical else []
    return [*agent.tools, *extra]


def _worker(
    agent: Agent,
    tasks: Sequence[Task],
    inputs: Mapping[str, Any],
    model_for: ModelFor,
    hierarchical: bool,
) -> Worker:
    from agentensemble.workflows.delegation import Worker

    role = fill_template(agent.role, inputs)
    goal = fill_template(agent.goal, inputs)
    remote = remote_of(agent)
    if remote is not None:  # answers by itself: no model, tools or prompt of ours
        unused = cast(ChatModel, None)
        task = AgentTask(role=role, goal=goal, description="", expected_output="", model=unused)
        return Worker(role=role, goal=goal, agent_task=task, remote=remote)
    background = fill_template(agent.background, inputs) if agent.background else None
    typed = [task.output_type for task in tasks if task.agent is agent and task.output_type]
    sources = _sources(agent, tasks, hierarchical)
    try:
        tools = ToolResolver().resolve(sources) if sources else None
    except ConfigurationError as error:
        raise ConfigurationError(f"agent {agent.role!r}: {error}") from error
    return Worker(
        role=role,
        goal=goal,
        agent_task=AgentTask(
            role=role,
            goal=goal,
            background=background,
            description="",
            expected_output="",
            model=model_for(agent),
            response_format=agent.response_format,
            max_iterations=agent.max_iterations,
            tools=tools,
            output_type=typed[0] if hierarchical and len(typed) == 1 else None,
            verbose=agent.verbose,
            skills=listing(agent.skills),
            context_policy=agent.context_policy,
            tool_policy=agent.tool_policy,
        ),
    )


__all__ = [
    "MANAGER_ROLE",
    "build_team",
    "check_team",
    "model_resolver",
    "resolve_model",
    "team_agents",
]
