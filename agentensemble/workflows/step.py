"""The one Step shape: a Task, a Loop, a Graph, a nested Ensemble and a for_each fan-out all run
as steps. A step is run with the run's context (``StepCall``) and returns its outputs
(``StepResult``); the sequential and parallel runners, a loop's body and a graph's states run
steps, never caring which kind.

Every task run of a run has a ``task_index`` (its slot), fixed before the run starts: each step
owns ``capacity`` consecutive slots from its ``base`` (a loop ``max_iterations`` times its
body's, a graph ``max_steps`` times its largest state's, a fan-out one per item). So the same
task run gets the same index whatever order concurrent work happens in (a durable run numbers
its checkpoints by it), and sorting outputs by slot gives the ensemble's order: steps in list
order, iterations and graph steps in the order they ran, fan-out items in item order.

The user's objects are told apart by the ``step_kind`` class attribute ("task", "loop",
"graph", "ensemble"): this module sits below the Ensemble facade and never imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import field, fields
from itertools import chain
from operator import is_
from typing import Any, NamedTuple, Protocol

from agentensemble._base.dataclass import dataclass
from agentensemble.errors import TaskExecutionError
from agentensemble.execution.agent_executor import ExecutionEnv
from agentensemble.execution.prompts import ContextItem, ContextItems
from agentensemble.outputs import ExitReason, GraphResult, LoopResult, TaskOutput

STEP_KINDS = ("task", "loop", "graph", "ensemble")


def step_kind(obj: Any) -> str | None:
    """ "task", "loop", "graph" or "ensemble" for a step of an ensemble; None for anything else."""
    kind = getattr(type(obj), "step_kind", None)
    return kind if kind in STEP_KINDS else None


def step_label(obj: Any) -> str:
    """A short name for messages: the step's name, or the start of a task's description."""
    label = getattr(obj, "label", None)
    return label if isinstance(label, str) else type(obj).__name__


def children(obj: Any) -> list[Any]:
    """The steps directly inside ``obj``: a loop's body, a graph's states, an ensemble's tasks."""
    kind = step_kind(obj)
    if kind == "loop":
        return list(obj.body)
    if kind == "graph":
        return list(obj.states.values())
    if kind == "ensemble":
        return list(obj.tasks)
    return []


def walk(steps: Sequence[Any]) -> Iterator[Any]:
    """Every step in ``steps`` and inside them, depth first, in declaration order."""
    for step in steps:
        yield step
        yield from walk(children(step))


def leaf_tasks(steps: Sequence[Any]) -> list[Any]:
    """Every Task in ``steps`` and inside their loops, graphs and nested ensembles."""
    return [step for step in walk(steps) if step_kind(step) == "task"]


def context_of(obj: Any) -> list[Any]:
    """What a step names in ``context`` (a nested ensemble names none)."""
    return list(getattr(obj, "context", ())) if step_kind(obj) != "ensemble" else []


def outside_deps(obj: Any) -> list[Any]:
    """The steps named in ``context`` anywhere inside ``obj`` that are not part of ``obj``: what
    a PARALLEL run must finish before it starts ``obj``."""
    if step_kind(obj) == "task":  # holds no steps: what it names, once each, in C
        named = context_of(obj)
        unique = dict(zip(map(id, named), named, strict=True))
        unique.pop(id(obj), None)
        return list(unique.values())
    steps = list(walk([obj]))
    found: dict[int, Any] = {}
    for step in steps:  # Python work per step inside; per context link, none (C)
        named = context_of(step)
        if named:
            found.update(zip(map(id, named), named, strict=True))  # a key seen keeps its place
    if found:
        for step in steps:
            found.pop(id(step), None)
    return list(found.values())


def body_key(obj: Any) -> str:
    """How a step is keyed in ``LoopState.outputs`` and the loop's history: its name (or a
    task's label when it has none)."""
    return step_label(obj)


@dataclass(frozen=True)
class Feedback:
    """Revision feedback for a step run again: its own previous output (if it has one) and the
    output that sent the run back to it (the critic's remarks)."""

    previous: TaskOutput | None
    cause: TaskOutput


@dataclass
class Scope:
    """The outputs ``context`` can name: this body's (one loop iteration, one graph), then the
    enclosing ones'. Each step's entry is what a later step's context gets."""

    finals: dict[int, list[TaskOutput]] = field(default_factory=dict)
    parent: Scope | None = None

    @property
    def steps(self) -> dict[int, tuple[Any, list[TaskOutput]]]:
        """Each step recorded here, with what it handed on (by the step's identity)."""
        return self._steps

    def record(self, step: Any, outputs: list[TaskOutput]) -> None:
        """``step`` handed ``outputs`` on (what a later ``context`` naming it gets)."""
        if self._finds(step):  # a step run again (a graph's state) or hiding an outer run
            self._rewrites[0] += 1
        self.finals[id(step)] = outputs
        self._steps[id(step)] = (step, outputs)

    def __post_init__(self) -> None:
        self._steps: dict[int, tuple[Any, list[TaskOutput]]] = {}
        self._rewrites: list[int] = self.parent._rewrites if self.parent is not None else [0]
        """Records, anywhere in this tree of scopes, that changed what ``lookup`` finds for a
        step it found before: a ``_Gathered`` made before one is stale. Shared with the
        parent, so one read tells."""
        self._gathered: _Gathered | None = None

    def _finds(self, step: Any) -> bool:
        return self._found(id(step)) is not None

    def _found(self, key: int) -> list[TaskOutput] | None:
        """What the step of id ``key`` handed on, or None when no scope has recorded it."""
        scope: Scope | None = self
        while scope is not None:
            found = scope.finals.get(key)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def lookup(self, step: Any) -> list[TaskOutput]:
        found = self._found(id(step))
        return found if found is not None else []

    def lookup_all(self, steps: Sequence[Any]) -> list[TaskOutput]:
        """``lookup`` of each of ``steps`` in turn, flattened: one call per task, not one per
        step (a task naming every earlier task spent most of its time in the calls)."""
        return list(chain.from_iterable(filter(None, self._found_all(list(map(id, steps))))))

    def _found_all(self, keys: list[int]) -> list[list[TaskOutput] | None]:
        """``_found`` of each key in turn, in C: one ``dict.get`` pass per scope that recorded
        anything, the outermost first, each inner one's entry replacing what is found outside
        (``get(key, found_outside)``). A body step naming every earlier step outside its loop
        did Python work per named step, in every iteration."""
        levels: list[dict[int, list[TaskOutput]]] = []
        scope: Scope | None = self
        while scope is not None:
            if scope.finals:
                levels.append(scope.finals)
            scope = scope.parent
        if not levels:
            return [None] * len(keys)
        found: list[list[TaskOutput] | None] = list(map(levels[-1].get, keys))
        for finals in reversed(levels[:-1]):
            found = list(map(finals.get, keys, found))
        return found

    def gather(
        self, steps: Sequence[Any], as_items: Callable[[Sequence[TaskOutput]], list[ContextItem]]
    ) -> ContextItems:
        """``lookup_all(steps)`` as prompt items (``as_items``), made in proportion to what is
        new since the last call rather than to ``len(steps)``.

        Task ``n`` of a chain names every earlier task: its context is task ``n - 1``'s plus one
        step. So the last result is kept with the steps it was made from, and when ``steps``
        starts with those very steps (by identity: two equal-looking tasks are two tasks) and no
        record since changed what they find, only the steps after them are looked up and their
        items appended (``ContextItems.extended``). Anything else (another order, a step not
        run yet, a state run again) builds it all again."""
        if not steps:
            return _NO_ITEMS
        last = self._gathered
        rewrites = self._rewrites[0]
        if (
            last is not None
            and last.rewrites == rewrites
            and len(steps) >= len(last.steps)
            and all(map(is_, steps, last.steps))  # in C: no Python work per earlier step
        ):
            known = len(last.steps)
            if len(steps) == known:
                return last.items
            new, base, named = steps[known:], last.items, last.steps
        else:
            new, base, named = steps, _NO_ITEMS, []
        found = self._found_all(list(map(id, new)))
        items = base.extended(as_items(list(chain.from_iterable(filter(None, found)))))
        if None not in found:
            named += new  # the kept steps grow with the kept items: both by appending
            self._gathered = _Gathered(named, rewrites, items)
        else:  # a step not recorded yet: recording it later changes this result
            self._gathered = None
        return items

    def has(self, step: Any) -> bool:
        return id(step) in self.finals

    def child(self) -> Scope:
        return Scope(parent=self)


class _Gathered(NamedTuple):
    """``Scope.gather``'s last result: the steps it was made from (a list only it appends to;
    it holds them, so their ids stay theirs), the scopes' rewrite count then, and the items."""

    steps: list[Any]
    rewrites: int
    items: ContextItems


_NO_ITEMS = ContextItems()


@dataclass
class RunState:
    """What a run has produced so far; survives a failure so nothing is lost."""

    total: int = 0
    """Slots in the run: every task run's ``task_index`` is at most this."""
    records: list[tuple[int, Any, TaskOutput]] = field(default_factory=list)
    """(slot, Task, output) of every completed task run, in completion order."""
    loops: dict[str, LoopResult] = field(default_factory=dict)
    graphs: dict[str, GraphResult] = field(default_factory=dict)
    exit_reason: ExitReason = ExitReason.COMPLETED
    failed: tuple[int, Any] | None = None
    """(slot, Task) of the first task run that failed."""
    context_items: dict[int, tuple[TaskOutput, ContextItem]] = field(default_factory=dict)
    """Each output as prompt context, built once (keyed by the output's identity; the output is
    held with it, so its id cannot be reused by another output meanwhile)."""

    def record(self, slot: int, task: Any, output: TaskOutput) -> None:
        self.records.append((slot, task, output))

    def ordered(self) -> tuple[list[TaskOutput], list[Any]]:
        """Completed outputs and their tasks in the ensemble's order (by slot)."""
        records = sorted(self.records, key=lambda record: record[0])
        return [output for _, _, output in records], [task for _, task, _ in records]

    def context_items_of(self, outputs: Sequence[TaskOutput]) -> list[ContextItem]:
        """``context_item`` of each output in turn: one call per task, not one per output."""
        get = self.context_items.get
        items: list[ContextItem] = []
        for output in outputs:
            found = get(id(output))
            if found is not None and found[0] is output:
                items.append(found[1])
            else:
                items.append(self.context_item(output))
        return items

    def context_item(self, output: TaskOutput) -> ContextItem:
        found = self.context_items.get(id(output))
        if found is not None and found[0] is output:
            return found[1]
        item = ContextItem(output.task_description, output.agent_role, output.raw)
        self.context_items[id(output)] = (output, item)
        return item


@dataclass
class StepCall:
    """What a step runs with: the run's services and state, where its slots start, the scope
    its context is read from, and what the enclosing step hands its first task."""

    env: ExecutionEnv
    inputs: Any
    state: RunState
    scope: Scope
    base: int = 0
    """Slots ``base + 1 .. base + capacity`` belong to the step."""
    context: tuple[TaskOutput, ...] = ()
    """Outputs handed in from outside (a loop's or graph's own ``context``)."""
    feedback: Feedback | None = None
    within: tuple[str, ...] = ()
    """Where the step sits: the enclosing loop iterations, graph steps, nested ensembles
    (``TaskStarted.within``)."""

    def at(self, base: int, **changes: Any) -> StepCall:
        """This call for a step whose slots start after ``base``, with ``changes``: a shallow
        copy (``dataclasses.replace`` without running ``__init__`` again, a third of its cost
        on every step of every run; the class has no ``__post_init__`` to skip)."""
        unknown = changes.keys() - _STEP_CALL_FIELDS
        if unknown:
            raise TypeError(f"StepCall has no field {sorted(unknown)[0]!r}")
        moved = object.__new__(StepCall)
        moved.__dict__.update(self.__dict__, base=base, **changes)
        return moved


_STEP_CALL_FIELDS = frozenset(f.name for f in fields(StepCall))


@dataclass
class StepResult:
    """What a step produced: ``outputs`` is what a later step's ``context`` gets (the final
    output, or every item of a fan-out), ``stop`` whether the run must stop (a reviewer said
    so), ``task_indices`` the slots of the task runs it made, in order."""

    outputs: list[TaskOutput] = field(default_factory=list)
    stop: bool = False
    task_indices: list[int] = field(default_factory=list)

    @property
    def final(self) -> TaskOutput | None:
        return self.outputs[-1] if self.outputs else None


class Step(Protocol):
    """A prepared step: run it with the run's context, get its outputs."""

    @property
    def source(self) -> Any:
        """The user's object (Task, Loop, Graph, Ensemble): context names it."""
        ...

    @property
    def capacity(self) -> int:
        """How many task-run slots it may use at most."""
        ...

    async def run(self, call: StepCall) -> StepResult: ...


async def run_in_order(steps: Sequence[Step], call: StepCall) -> StepResult:
    """Run ``steps`` one after the other (a sequential ensemble, a loop's body). The first step
    gets ``call``'s context and feedback; each step's outputs go into ``call.scope``. Returns
    the last step's outputs (the last non-empty ones), stopping early when a step says stop."""
    base = call.base
    indices: list[int] = []
    last: list[TaskOutput] = []
    for position, step in enumerate(steps):
        handed = {} if position == 0 else {"context": (), "feedback": None}
        result = await step.run(call.at(base, **handed))
        call.scope.record(step.source, result.outputs)
        indices += result.task_indices
        last = result.outputs or last
        base += step.capacity
        if result.stop:
            return StepResult(last, True, indices)
    return StepResult(last, False, indices)


def step_failure(error: TaskExecutionError) -> TaskExecutionError:
    """Mark ``error`` as raised by a step itself (a loop's cap, a graph's missing edge, a
    predicate): runners pass it up as it is instead of wrapping it as a task's failure."""
    error._step_error = True  # type: ignore[attr-defined]
    return error


def is_step_failure(error: BaseException) -> bool:
    return getattr(error, "_step_error", False) is True


__all__ = [
    "Feedback",
    "RunState",
    "Scope",
    "Step",
    "StepCall",
    "StepResult",
    "body_key",
    "children",
    "context_of",
    "is_step_failure",
    "leaf_tasks",
    "outside_deps",
    "run_in_order",
    "step_failure",
    "step_kind",
    "step_label",
    "walk",
]
