"""How the facade wires memory, knowledge and sessions into a run (``agentensemble.memory`` is
imported only when one of them is configured, so ``import agentensemble`` stays cheap)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from agentensemble.errors import ConfigurationError
from agentensemble.task_memory import MemoryScope
from agentensemble.templates import fill_template

_STORE_METHODS = ("add", "search", "entries")
_USE = "Ensemble(memory=SQLiteMemory('memory.sqlite')) from agentensemble.memory"


def check_store(value: Any) -> Any:
    """``Ensemble(memory=...)``: a memory store or None."""
    if value is None:
        return None
    missing = [name for name in _STORE_METHODS if not callable(getattr(value, name, None))]
    if isinstance(value, type) or missing:
        raise ValueError(f"memory must be a memory store such as {_USE}; got {value!r}")
    return value


def check_scopes(value: list[Any] | str) -> list[Any]:
    """``Task(memory=[...])``: non-blank scope names or ``MemoryScope`` objects, each name once."""
    if isinstance(value, str):
        raise ValueError(f"memory takes a list of scope names, e.g. memory=[{value!r}]")
    kept: dict[str, Any] = {}
    for scope in value:
        if isinstance(scope, MemoryScope):
            name = scope.name
        elif isinstance(scope, str) and scope.strip():
            name = scope
        else:
            raise ValueError(
                "memory scopes must be non-blank strings or MemoryScope(...) "
                f"(from agentensemble.memory); got {scope!r}"
            )
        if name in kept and kept[name] != scope:
            raise ValueError(f"memory scope {name!r} is listed twice with different settings")
        kept.setdefault(name, scope)
    return list(kept.values())


def scope_texts(scopes: Sequence[Any]) -> list[str]:
    """The templates of a task's memory scopes: names and text queries (for the check that
    every variable is given)."""
    texts: list[str] = []
    for scope in scopes:
        if isinstance(scope, MemoryScope):
            texts.append(scope.name)
            if isinstance(scope.query, str):
                texts.append(scope.query)
        else:
            texts.append(scope)
    return texts


def filled_scopes(scopes: Sequence[Any], inputs: Mapping[str, Any]) -> list[MemoryScope]:
    """A task's scopes with their names and text queries filled from the run's inputs."""
    filled: dict[str, MemoryScope] = {}
    for scope in scopes:
        rule = scope if isinstance(scope, MemoryScope) else MemoryScope(scope)
        query = fill_template(rule.query, inputs) if isinstance(rule.query, str) else rule.query
        done = dataclasses.replace(rule, name=fill_template(rule.name, inputs), query=query)
        filled.setdefault(done.name, done)
    return list(filled.values())


def check_knowledge(value: list[Any]) -> list[Any]:
    for item in value:
        if isinstance(item, type) or not callable(getattr(item, "sync", None)):
            raise ValueError(
                "knowledge takes Knowledge(paths=[...]) objects from agentensemble.memory; "
                f"got {item!r}"
            )
    return list(value)


def uses_ensemble_memory(tools: Sequence[Any]) -> bool:
    return any(getattr(tool, "uses_ensemble_memory", False) is True for tool in tools)


def check_wiring(memory: Any, tasks: Sequence[Any], hierarchical: bool = False) -> None:
    """Memory scopes and store-less MemoryTools need ``Ensemble(memory=...)``. (``hierarchical``
    is accepted for callers of earlier versions: a manager's delegations now show memory.)"""
    if memory is not None:
        return
    for index, task in enumerate(tasks, start=1):
        if task.memory:
            raise ValueError(
                f"task {index} ({task.label!r}) has memory={task.memory!r}, but the ensemble "
                f"has no memory store. Pass {_USE}"
            )
        tools = [*task.tools, *(task.agent.tools if task.agent is not None else [])]
        if uses_ensemble_memory(tools):
            raise ValueError(
                f"task {index} ({task.label!r}) has a MemoryTool without a store, and the "
                f"ensemble has no memory store. Pass {_USE}, or MemoryTool(scope, store=...)"
            )


def check_session(session: Any, memory: Any, hierarchical: bool = False) -> str | None:
    """``run(..., session=...)``: a non-blank string, and a store to keep the session in (any
    workflow; ``hierarchical`` is accepted for callers of earlier versions)."""
    if session is None:
        return None
    if not isinstance(session, str) or not session.strip():
        raise ValueError(f"session must be a non-blank string such as 'user-42'; got {session!r}")
    if memory is None:
        raise ConfigurationError(
            f"run(session={session!r}) needs a store to keep the conversation in. Pass {_USE}"
        )
    from agentensemble.memory.store import unstorable

    if unstorable(session):  # its scope would be refused at the first task: say so up front
        raise ValueError(
            f"session must not hold NUL characters or lone surrogates; got {session!r}"
        )
    return session


def knowledge_of(ensemble_knowledge: Sequence[Any], tasks: Sequence[Any]) -> list[Any]:
    """Every distinct Knowledge of the run."""
    seen: dict[int, Any] = {}
    for item in [*ensemble_knowledge, *(k for task in tasks for k in task.knowledge)]:
        seen.setdefault(id(item), item)
    return list(seen.values())


async def sync_knowledge(knowledge: Sequence[Any], memory: Any) -> None:
    """Index new or changed files before the run; an unreadable file fails the run here,
    before any model call."""
    for item in knowledge:
        try:
            await asyncio.to_thread(item.sync, memory)
        except (OSError, ValueError) as error:
            raise ConfigurationError(f"knowledge {item!r} could not be indexed: {error}") from error


def task_memory(
    *,
    role: str,
    task: Any,
    memory: Any,
    ensemble_knowledge: Sequence[Any],
    session: str | None,
    inputs: Mapping[str, Any] | None = None,
) -> Any:
    """The ``TaskMemory`` for one task, or None when it has no memory of any kind. Scope
    names and text queries are filled from ``inputs``."""
    knowledge = [*ensemble_knowledge, *task.knowledge]
    if not task.memory and not knowledge and session is None:
        return None
    from agentensemble.memory._task_memory import StoreTaskMemory

    rules = filled_scopes(task.memory, inputs or {})
    return StoreTaskMemory(
        role=role,
        store=memory,
        scopes=[rule.name for rule in rules],
        rules={rule.name: rule for rule in rules if rule != MemoryScope(rule.name)},
        knowledge=[(item.store_for(memory), item.scope) for item in knowledge],
        session=session,
    )


def team_memory(items: Sequence[Any]) -> Any:
    """For the hierarchical workflow: ``memory_for(role, manager=False)`` giving the
    ``TaskMemory`` of one delegation (or of the manager), or None when the run has no memory.

    The manager hands out work in its own words, not task by task, so a delegation is shown
    (and writes to) every memory scope and knowledge of the run's tasks, and the worker's own
    session history; the manager sees its own session history (its earlier answers)."""
    found = [item.memory for item in items if item.memory is not None]
    if not found:
        return None
    from dataclasses import replace

    first = found[0]
    scopes = list(dict.fromkeys(scope for m in found for scope in m.scopes))
    knowledge = list(dict.fromkeys(pair for m in found for pair in m.knowledge))
    rules = {name: rule for m in found for name, rule in m.rules.items()}

    def memory_for(role: str, manager: bool = False) -> Any:
        if manager:
            session_only = replace(first, role=role, scopes=[], knowledge=[], rules={})
            return session_only if first.session is not None else None
        return replace(first, role=role, scopes=scopes, knowledge=knowledge, rules=rules)

    return memory_for


__all__ = [
    "check_knowledge",
    "check_scopes",
    "check_session",
    "check_store",
    "check_wiring",
    "filled_scopes",
    "knowledge_of",
    "scope_texts",
    "sync_knowledge",
    "task_memory",
    "team_memory",
]
