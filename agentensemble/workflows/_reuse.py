"""A plain run's preparation, kept between runs while nothing it was made from changed.

Checking the inputs and the structure, filling templates and building the steps cost about a
tenth of a one-task run, and gave the same result on every run of the same ensemble. From
an ensemble's second run on (a script that runs once pays nothing for it), its prepared run
is kept when it is *plain*: every step a Task without
``for_each``, memory or knowledge; no review; nobody delegates and no manager; no tool source
(an MCP server) or ``AgentTool`` instance in any tool list; no model named by a string (each
run builds its own ``LLM`` for a name); no session; and inputs whose values are text, numbers,
booleans or None. Such a run's prepared steps are only read while it runs, so runs may share
them, even at once.

It is reused only when the ensemble, each of its tasks and each agent (of the team and of
every task) hold the very same objects in every field, by identity, and their lists, sets
and dicts the same items; and when the inputs are equal, value and type. Pydantic models
are mutable, so this is what tells a change: setting a field (``task.description = ...``), or
appending to a list (``agent.tools.append(...)``), makes the next run prepare afresh. Objects
deeper than that are the user's own and read when used, as they always were (a tool's body, a
model's settings); an ``LLM``'s settings (its key, its base URL) are checked again on every
run, as preparing does, so a missing key still fails before any model call.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any, NamedTuple

from agentensemble.tools.base import AgentTool
from agentensemble.tools.source import ToolSource
from agentensemble.workflows import Workflow
from agentensemble.workflows._review_gates import NEVER, policy_value
from agentensemble.workflows.base import PreparedRun, WorkflowRunner
from agentensemble.workflows.step import step_kind

Plan = tuple[PreparedRun, WorkflowRunner]
_PLAIN_VALUES = (str, int, float, bool, type(None))
_MUTABLE = (list, dict, set)
_NOT_PREPARED = frozenset({"listeners", "review_handler"})


def _getter(names: list[str]) -> Callable[[dict[str, Any]], tuple[Any, ...]] | None:
    """Those entries of a model's ``__dict__``, as a tuple, read at C speed."""
    if not names:
        return None
    if len(names) == 1:
        return lambda fields, name=names[0]: (fields[name],)  # type: ignore[misc]
    return itemgetter(*names)


class _Watch(NamedTuple):
    """What is compared of one model (the ensemble, a task, an agent)."""

    fields: Callable[[dict[str, Any]], tuple[Any, ...]] | None
    mutable: Callable[[dict[str, Any]], tuple[Any, ...]] | None  # those holding a list...
    size: int


def _watch(model: Any, skip: frozenset[str] = frozenset()) -> _Watch:
    values = model.__dict__
    names = [name for name in values if name not in skip]
    mutable = [name for name in names if type(values[name]) in _MUTABLE]
    return _Watch(_getter(names), _getter(mutable), len(values))


def _state(models: list[Any], watches: list[_Watch], held: list[Any] | None) -> tuple[int, ...]:
    """The ids of every field's value and of every item of a list, dict or set field, with
    the lengths between them. ``held``: where to keep every object whose id is taken (while
    kept, no other object can have their ids)."""
    ids: list[int] = []
    for model, watch in zip(models, watches, strict=True):
        values = model.__dict__
        ids.append(len(values))
        if len(values) != watch.size or watch.fields is None:
            continue
        found = watch.fields(values)
        ids += map(id, found)
        if held is not None:
            held.append(found)
        for value in watch.mutable(values) if watch.mutable is not None else ():
            if type(value) not in _MUTABLE or not value:  # empty, as most are; or replaced
                ids.append(0)  # (then the field's own id differs already)
                continue
            items = [*value, *value.values()] if type(value) is dict else list(value)
            ids.append(len(items))
            ids += map(id, items)
            if held is not None:
                held.append(items)
    return tuple(ids)


def _plain(ensemble: Any) -> list[Any] | None:
    """The ensemble, its tasks and agents when its run is plain (see above); else None."""
    tasks = ensemble.__dict__.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return None
    if ensemble.memory is not None or ensemble.knowledge:
        return None
    if ensemble.workflow is Workflow.HIERARCHICAL or policy_value(ensemble.review_policy) != NEVER:
        return None
    models = [ensemble, *tasks]
    for task in tasks:
        if step_kind(task) != "task" or task.for_each is not None or task.handler is not None:
            return None
        if task.memory or task.knowledge:
            return None
        if task.review is not None or task.before_review is not None:
            return None
        if task.agent is not None:
            models.append(task.agent)
    models += ensemble.agents
    if any(agent.allow_delegation for agent in models[len(tasks) + 1 :]):
        return None
    return models


def _inputs_key(values: Mapping[str, Any]) -> tuple[Any, ...] | None:
    key = []
    for name, value in values.items():
        if type(value) not in _PLAIN_VALUES:
            return None
        key.append((name, type(value), value))
    return tuple(key)


class _Kept(NamedTuple):
    ensemble: weakref.ref[Any]
    models: list[Any]  # the tasks and agents (the ensemble is ``ensemble``)
    watches: list[_Watch]
    state: tuple[int, ...]
    held: list[Any]
    inputs: tuple[Any, ...]
    no_handler: bool  # of the review handler, preparation reads only whether there is one
    llms: list[tuple[Any, str]]  # checked again on every run, with preparation's words
    plan: Plan


_kept: dict[int, _Kept] = {}
_ran: dict[int, weakref.ref[Any]] = {}  # ensembles that ran once: kept from their second run


def _forget(key: int, ref: weakref.ref[Any]) -> None:
    kept = _kept.get(key)
    if kept is not None and kept.ensemble is ref:  # not a newer ensemble that took the id
        _kept.pop(key, None)
    if _ran.get(key) is ref:
        _ran.pop(key, None)


def reused_run(ensemble: Any, values: Mapping[str, Any], session: str | None) -> Plan | None:
    """The run prepared last time for this ensemble and these inputs, and its runner, if
    nothing changed."""
    kept = _kept.get(id(ensemble))
    if kept is None or session is not None or _inputs_key(values) != kept.inputs:
        return None
    if (ensemble.review_handler is None) != kept.no_handler or kept.ensemble() is not ensemble:
        return None
    if _state([ensemble, *kept.models], kept.watches, None) != kept.state:
        return None
    if kept.llms:
        from agentensemble.workflows.team import resolve_model

        for model, who in kept.llms:  # as preparing does: a missing key fails before any call
            resolve_model(model, who, {})
    return kept.plan


def keep_run(ensemble: Any, values: Mapping[str, Any], session: str | None, plan: Plan) -> None:
    """Keep ``plan`` for the next run of ``ensemble`` with the same inputs, if plain. The
    runner is kept too: it holds only the ensemble's settings (``runners.RunSettings``), and
    a run's state lives in the run."""
    key = id(ensemble)
    ran = _ran.get(key)
    if ran is None or id(ran()) != key:  # a first run: a script that runs once pays
        ref = weakref.ref(ensemble, lambda dead, key=key: _forget(key, dead))  # type: ignore[misc]
        _ran[key] = ref  # nothing more (keeping a 400-task chain costs a quarter of preparing)
        return
    _kept.pop(key, None)  # what was kept no longer matches (or this run is not plain)
    inputs = _inputs_key(values)
    models = _plain(ensemble) if inputs is not None and session is None else None
    if models is None or inputs is None:
        return
    from agentensemble.llm.litellm_model import LLM  # loaded by preparation already

    llms: list[tuple[Any, str]] = []
    for index, item in enumerate(plan[0].tasks, start=1):
        agent_task, agent = item.agent_task, item.task.agent
        if agent_task is None:
            return
        for tools in (item.task.tools, agent.tools if agent is not None else []):
            if any(isinstance(tool, (ToolSource, AgentTool)) for tool in tools):
                return  # resolved again on every run (prepare._resolved_tools)
        chosen = agent.llm if agent is not None and agent.llm is not None else ensemble.llm
        if isinstance(chosen, str):  # a new LLM for the name on every run
            return
        if isinstance(agent_task.model, LLM):
            who = "its synthesised agent" if agent is None else f"agent {agent.role!r}"
            llms.append((agent_task.model, f"task {index} ({item.task.label!r}): {who}"))
    watches = [_watch(ensemble, _NOT_PREPARED), *(_watch(model) for model in models[1:])]
    held: list[Any] = []
    state = _state(models, watches, held)
    _kept[key] = _Kept(
        ran,
        models[1:],
        watches,
        state,
        held,
        inputs,
        ensemble.review_handler is None,
        llms,
        plan,
    )


__all__ = ["keep_run", "reused_run"]
