"""Checks of an ensemble's steps made when it is built, before any model call.

What ``context`` may name (an earlier step; inside a loop body an earlier body step or a step
outside the loop; inside a graph another state; never the step itself, in any workflow), no
cycle in a PARALLEL order of work, no step object used twice, loop and graph names unique, and
what HIERARCHICAL cannot run. Loops and graphs check their own shape (``Loop`` / ``Graph``
validators).

Each context link is looked at in C (set and identity operations over ``map(id, ...)``): a
chain of ``n`` steps each naming every earlier one has ``n * n / 2`` links, and Python work per
link made preparing it quadratic. Python loops over links run only once the fast check found a
problem, to name it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import compress, repeat
from operator import is_, not_
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
        _raise_itself(steps)
        if not _has_order_of_work(steps, top):  # then name the stranger or the cycle
            found: dict[int, list[Any]] = {}

            def deps(step: Any) -> list[Any]:
                known = found.get(id(step))
                if known is None:
                    outside, named = outside_deps(step), context_of(step)
                    inside = compress(outside, map(top.__contains__, map(id, outside)))
                    strangers = compress(named, map(not_, map(top.__contains__, map(id, named))))
                    known = found[id(step)] = [*inside, *strangers]
                return known

            check_task_graph(steps, deps=deps)
    _check_all_inside(steps, workflow, top)


def _check_all_inside(steps: Sequence[Any], workflow: Workflow, top: set[int]) -> None:
    earlier: set[int] = set()
    for step in steps:
        if step_kind(step) in ("loop", "graph"):  # a task has nothing inside; a nested
            if workflow is Workflow.SEQUENTIAL:  # ensemble checked its own
                _check_inside(step, (earlier,), frozenset())
            else:
                _check_inside(step, (top,), frozenset())
        earlier.add(id(step))


def _has_order_of_work(steps: Sequence[Any], top: set[int]) -> bool:
    """Whether the top-level steps have an order of work with no step outside them (then
    ``check_task_graph`` finds nothing), found in C per context link; False when unsure (then
    the full check runs, and names the problem if there is one).

    A list in any order (a chain listed backwards, say) made ``check_task_graph`` do Python
    work per link. Here the steps are tried fewest dependencies first, each needing all its
    dependencies among those already taken (``set.issuperset``): when every step names all it
    depends on, even indirectly (a chain), that is one pass. Otherwise the steps left over are
    tried again, a few passes at most."""
    needs: list[set[int]] = []
    for step in steps:
        ids = set(map(id, context_of(step)))
        if not top.issuperset(ids):
            return False  # a step outside: the full check names it
        if step_kind(step) != "task":
            ids |= top.intersection(map(id, outside_deps(step)))
        needs.append(ids)
    pending = sorted(range(len(steps)), key=lambda index: len(needs[index]))
    taken: set[int] = set()
    for _ in range(_ORDER_PASSES):
        left = []
        for index in pending:
            if taken.issuperset(needs[index]):
                taken.add(id(steps[index]))
            else:
                left.append(index)
        if not left:
            return True
        if len(left) == len(pending):
            return False  # a cycle, or a dependency never taken
        pending = left
    return False


_ORDER_PASSES = 4


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
        if kind == "ensemble" and getattr(step, "limits", None) is not None:
            raise ConfigurationError(
                f"the nested ensemble {step_label(step)!r} has limits; a nested ensemble runs "
                "as a step of its outer run and counts on the outer run's budget: set limits "
                "on the outer ensemble (or on its run)"
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
            outside = outside_deps(step)
            named = new = context_of(step)
            if outside:
                named += compress(outside, map(top.__contains__, map(id, outside)))
        if not earlier.issuperset(map(id, new)):
            return index, step, named
        earlier.add(id(step))
    return None


def _raise_not_earlier(steps: Sequence[Any], index: int, step: Any, named: Sequence[Any]) -> None:
    """The error for the first step in ``named`` that is not before ``step`` (task ``index``)."""
    positions = {id(s): i for i, s in enumerate(steps, start=1)}
    for dependency in named:
        if dependency is step:
            raise ValueError(_itself(f"task {index} ({step_label(step)!r})"))
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


def _itself(who: str) -> str:
    return (
        f"{who} has itself as context; a step cannot use its own output as its context: "
        "remove it from its context list"
    )


def _raise_itself(steps: Sequence[Any]) -> None:
    """The error for the first top-level step naming itself in its own ``context``, if any."""
    for index, step in enumerate(steps, start=1):
        if any(map(is_, context_of(step), repeat(step))):
            raise ValueError(_itself(f"task {index} ({step_label(step)!r})"))


Sight = tuple[Collection[int], ...]
"""The ids ``context`` may name at some depth: the union of these sets (the outer ones first),
less the enclosing steps (``hidden``)."""


def _check_inside(step: Any, sight: Sight, hidden: frozenset[int]) -> None:
    """A loop body's steps see earlier body steps and what the loop sees; a graph's states see
    each other and what the graph sees; none sees itself or a step enclosing it. Nested
    ensembles checked their own tasks."""
    kind = step_kind(step)
    hidden = hidden | {id(step)}
    if kind == "loop":
        body = list(step.body)
        seen: set[int] = set()
        here = (*sight, seen)
        for position, inner in enumerate(body):
            _check_names(inner, here, hidden, f"Loop {step.name!r} body", body[position + 1 :])
            _check_inside(inner, here, hidden)
            seen.add(id(inner))
    elif kind == "graph":
        states = list(step.states.values())
        here = (*sight, set(map(id, states)))
        for inner in states:
            _check_names(inner, here, hidden | {id(inner)}, f"Graph {step.name!r}", ())
            _check_inside(inner, here, hidden)


def _sees_all(sight: Sight, hidden: frozenset[int], named: Sequence[Any]) -> bool:
    """Whether every step in ``named`` is visible (in C: set operations, no loop per step)."""
    rest = set(map(id, named))
    if not rest.isdisjoint(hidden):
        return False
    for layer in reversed(sight):  # the innermost first: the smallest
        if not rest:
            break
        rest.difference_update(layer)
    return not rest


def _check_names(
    step: Any, sight: Sight, hidden: frozenset[int], where: str, later: Sequence[Any]
) -> None:
    named = context_of(step)
    if _sees_all(sight, hidden, named):
        return
    for dependency in named:  # name the first problem, in context order
        key = id(dependency)
        if dependency is step:
            raise ConfigurationError(_itself(f"{where}: step {step_label(step)!r}"))
        if key not in hidden and any(key in layer for layer in sight):
            continue
        if any(dependency is s for s in later):
            problem = "which runs later in the body"
        else:
            problem = "which it cannot see"
        raise ConfigurationError(
            f"{where}: step {step_label(step)!r} has context {step_label(dependency)!r}, "
            f"{problem}; context names an earlier step of the same body, another state of "
            "the same graph, or an earlier step outside it"
        )


__all__ = ["check_structure"]
