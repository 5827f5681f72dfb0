"""The task graph drawn by ``context``: checks run before any model call, and the order of work.

Pure functions over steps (tasks, loops, graphs, nested ensembles), keyed by identity (two
equal-looking tasks are still two tasks). ``deps`` says what a step waits for; by default its
``context``. It is not the ``Graph`` feature (``workflows/graph.py``): this is the order of work
a PARALLEL ensemble reads from ``context``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Task = Any  # a step: anything with ``context`` (or given ``deps``) and ``label``
Deps = Callable[[Any], Sequence[Any]]


def _context(step: Any) -> Sequence[Any]:
    return list(getattr(step, "context", ()))


def outside_context(tasks: Sequence[Task], deps: Deps = _context) -> tuple[int, Task, Task] | None:
    """The first ``(position, task, dependency)`` whose dependency is not among ``tasks``."""
    members = {id(task) for task in tasks}
    for index, task in enumerate(tasks, start=1):
        for dependency in deps(task):
            if id(dependency) not in members:
                return index, task, dependency
    return None


def find_cycle(tasks: Sequence[Task], deps: Deps = _context) -> list[Task] | None:
    """A cycle of context edges as ``[a, b, ..., a]`` (a needs b needs ... needs a), or None.

    Only edges between members of ``tasks`` count. Iterative depth-first search, so a long
    chain cannot hit the recursion limit.
    """
    members = {id(task): task for task in tasks}
    state: dict[int, int] = {}  # 1 = on the current path, 2 = finished
    for root in tasks:
        if id(root) in state:
            continue
        path: list[Task] = [root]
        pending = [iter(deps(root))]
        state[id(root)] = 1
        while pending:
            dependency = next(pending[-1], None)
            if dependency is None:
                state[id(path.pop())] = 2
                pending.pop()
                continue
            if id(dependency) not in members:
                continue
            mark = state.get(id(dependency))
            if mark == 1:
                start = next(i for i, t in enumerate(path) if t is dependency)
                return [*path[start:], dependency]
            if mark is None:
                state[id(dependency)] = 1
                path.append(dependency)
                pending.append(iter(deps(dependency)))
    return None


def check_task_graph(tasks: Sequence[Task], deps: Deps = _context) -> None:
    """ValueError naming the problem: a context task outside ``tasks``, or a cycle."""
    outside = outside_context(tasks, deps)
    if outside is not None:
        index, task, dependency = outside
        raise ValueError(
            f"task {index} ({task.label!r}) has context task {dependency.label!r}, "
            "which is not in this ensemble's tasks"
        )
    cycle = find_cycle(tasks, deps)
    if cycle is not None:
        names = " -> ".join(repr(task.label) for task in cycle)
        raise ValueError(
            f"the tasks' context forms a cycle: {names} (each needs the next one's output); "
            "remove one of these context links"
        )


def downstream_of(failed: Task, tasks: Sequence[Task], deps: Deps = _context) -> list[Task]:
    """Every task in ``tasks`` that needs ``failed``'s output, directly or not, in list order."""
    blocked = {id(failed)}
    changed = True
    while changed:
        changed = False
        for task in tasks:
            if id(task) not in blocked and any(id(d) in blocked for d in deps(task)):
                blocked.add(id(task))
                changed = True
    return [task for task in tasks if id(task) in blocked and task is not failed]


__all__ = ["check_task_graph", "downstream_of", "find_cycle", "outside_context"]
