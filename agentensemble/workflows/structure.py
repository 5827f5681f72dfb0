"""Checks of an ensemble's steps made when it is built, before any model call.

What ``context`` may name (an earlier step; inside a loop body an earlier body step or a step
outside the loop; inside a graph another state), no cycle in a PARALLEL order of work, no step
object used twice, loop and graph names unique, and what HIERARCHICAL cannot run. Loops and
graphs check their own shape (``Loop`` / ``Graph`` validators).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_
from typing import Any

from agentensemble.errors import ConfigurationError
from agentensemble.workflows import Workflow
from agentensemble.workflows.context_graph import check_task_graph
from agentensemble.workflows.step import context_of, outside_deps, step_kind, step_label, walk


def check_structure(steps: Sequence[Any], workflow: Workflow) -> None:
    """Raise naming the first problem: ValueError for a top-level task's context (as always),
    ConfigurationError for what loops, graphs, nested ensembles and fan-outs add."""
    _check_unique(steps)
    if workflow is Workflow.HIERARCHICAL:
        _check_hierarchical(steps)
    top = set(map(id, steps))
    late = _first_not_in_order(steps, top)
    if workflow is Workflow.SEQUENTIAL:
        if late is not None:
            _raise_not_earlier(steps, *late)
    elif late is not None:  # any list order; no cycle, none outside (in list order: neither)

        def deps(step: Any) -> list[Any]:
            inside = [d for d in outside_deps(step) if id(d) in top]
            return inside + [d for d in context_of(step) if id(d) not in top]

        check_task_graph(steps, deps=deps)
    for position, step in enumerate(steps):
        if step_kind(step) not in ("loop", "graph"):
            continue  # a task has nothing inside; a nested ensemble checked its own
        if workflow is Workflow.SEQUENTIAL:
            visible = {id(s) for s in steps[:position]}
        else:
            visible = top - {id(step)}
        _check_inside(step, frozenset(visible))


def _check_unique(steps: Sequence[Any]) -> None:
    seen: set[int] = set()
    names: dict[str, str] = {}
    for step in walk(steps):
        kind = step_kind(step)
        if id(step) in seen:
            raise ConfigurationError(
                f"the {kind} {step_label(step)!r} appears twice in this ensemble; a step "
                "object runs in one place: build another one for the other place"
            )
        seen.add(id(step))
        if kind == "ensemble" and step.workflow is Workflow.HIERARCHICAL:
            raise ConfigurationError(
                f"the nested ensemble {step_label(step)!r} is HIERARCHICAL; a nested ensemble "
                "runs as a step of its outer run: give it workflow SEQUENTIAL or PARALLEL"
            )
        if kind in ("loop", "graph"):
            name = step.name
            if name in names:
                raise ConfigurationError(
                    f"two steps are named {name!r} (a {names[name]} and a {kind}); loop and "
                    "graph names key EnsembleOutput.loops / .graphs, so make them unique"
                )
            names[name] = kind


def _check_hierarchical(steps: Sequence[Any]) -> None:
    for position, step in enumerate(steps, start=1):
        kind = step_kind(step)
        if kind != "task":
            raise ConfigurationError(
                f"step {position} is a {kind} ({step_label(step)!r}); workflow HIERARCHICAL "
                "runs tasks only: use SEQUENTIAL or PARALLEL for loops, graphs and nested "
                "ensembles"
            )
        if step.for_each is not None:
            raise ConfigurationError(
                f"task {position} ({step.label!r}) has for_each, which workflow HIERARCHICAL "
                "does not run (the manager plans the tasks); use SEQUENTIAL or PARALLEL"
            )


def _first_not_in_order(steps: Sequence[Any], top: set[int]) -> tuple[int, Any, list[Any]] | None:
    """The first step (position from 1, the step, what it names) naming anything but an
    earlier top-level step, or None: then a SEQUENTIAL order is right, and a PARALLEL one has
    no step outside and no cycle (every edge points back in the list).

    Checked in C: a membership test a named step (``set.issuperset`` over ``map(id, ...)``),
    and where a task's context starts with the previous task's (a chain: task ``n`` names task
    ``n - 1``'s context and one more), an identity comparison for that part, already found
    earlier, and membership tests for the rest only."""
    earlier: set[int] = set()
    previous: list[Any] = []  # the last task's context, all of it earlier than this step
    for index, step in enumerate(steps, start=1):
        if step_kind(step) == "task":  # holds no steps: it depends on its context alone
            named = step.context
            known = len(previous)
            if len(named) >= known and all(map(is_, named, previous)):
                new = named[known:] if known else named
            else:
                new = named
            previous = named
        else:  # what it names, then what its steps name at the top level
            named = new = [*context_of(step), *(d for d in outside_deps(step) if id(d) in top)]
        if not earlier.issuperset(map(id, new)):
            return index, step, named
        earlier.add(id(step))
    return None


def _raise_not_earlier(steps: Sequence[Any], index: int, step: Any, named: Sequence[Any]) -> None:
    """The error for the first step in ``named`` that is not before ``step`` (task ``index``)."""
    positions = {id(s): i for i, s in enumerate(steps, start=1)}
    for dependency in named:
        position = positions.get(id(dependency))
        if position is None:
            raise ValueError(
                f"task {index} ({step_label(step)!r}) has context task "
                f"{step_label(dependency)!r}, which is not in this ensemble's tasks"
            )
        if position >= index:
            raise ValueError(
                f"task {index} ({step_label(step)!r}) has context task "
                f"{step_label(dependency)!r}, which runs later (task {position}); context "
                "must come from an earlier task"
            )


def _check_inside(step: Any, visible: frozenset[int]) -> None:
    """A loop body's steps see earlier body steps and what the loop sees; a graph's states see
    each other and what the graph sees. Nested ensembles checked their own tasks."""
    kind = step_kind(step)
    if kind == "loop":
        body = list(step.body)
        for position, inner in enumerate(body):
            here = visible | {id(s) for s in body[:position]}
            _check_names(inner, here, f"Loop {step.name!r} body", later=body[position:])
            _check_inside(inner, frozenset(here))
    elif kind == "graph":
        states = list(step.states.values())
        for inner in states:
            here = visible | ({id(s) for s in states} - {id(inner)})
            _check_names(inner, here, f"Graph {step.name!r}", later=[inner])
            _check_inside(inner, frozenset(here))


def _check_names(step: Any, visible: frozenset[int], where: str, later: Sequence[Any]) -> None:
    for dependency in context_of(step):
        if id(dependency) in visible:
            continue
        if any(dependency is s for s in later):
            problem = "which runs later in the body (or is the step itself)"
        else:
            problem = "which it cannot see"
        raise ConfigurationError(
            f"{where}: step {step_label(step)!r} has context {step_label(dependency)!r}, "
            f"{problem}; context names an earlier step of the same body, another state of "
            "the same graph, or an earlier step outside it"
        )


__all__ = ["check_structure"]
