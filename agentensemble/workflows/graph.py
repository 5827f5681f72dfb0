"""Graph: named states, a start, and edges tried in declaration order after each state runs.

The first edge out of the state that just ran whose ``when`` holds (an edge without ``when``
always holds) names the next state, or ``Graph.END``. No match is a ``GraphNoEdgeError`` naming
the state; ``max_steps`` caps the states run. Each state gets the output of the state before
it as context; a revisited state is shown its previous output and the output that sent the run
back to it as revision feedback (with ``feedback=True``). Not to be confused with the
order of work ``context`` draws in a PARALLEL ensemble (``workflows/context_graph.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentensemble.errors import ConfigurationError, GraphMaxStepsError, GraphNoEdgeError
from agentensemble.events import GraphStepCompleted
from agentensemble.hints import reject_foreign_names
from agentensemble.outputs import GraphResult, TaskOutput
from agentensemble.workflows.loop import (
    call_predicate,
    check_cap,
    check_steps,
    predicate_failure,
    predicate_name,
)
from agentensemble.workflows.step import Feedback, Step, StepCall, StepResult, step_failure

END = "__end__"


@dataclass(frozen=True)
class GraphState:
    """What an edge's ``when`` sees after a state ran."""

    step: int
    """1-based count of states run so far, this one included."""
    state: str
    """The state that just ran."""
    output: TaskOutput
    """Its output."""
    outputs: dict[str, TaskOutput] = field(default_factory=dict)
    """The latest output of every state run so far."""
    path: list[str] = field(default_factory=list)
    """The states run so far, in order."""


class Edge(BaseModel):
    """From ``source`` to ``target`` (a state name or ``Graph.END``), when ``when`` holds."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)

    source: str
    target: str
    when: Callable[[GraphState], bool] | None = None

    def __init__(self, source: str | None = None, target: str | None = None, **data: Any) -> None:
        """``Edge("a", "b")`` or ``Edge(source="a", target="b", when=...)``."""
        if source is not None:
            data["source"] = source
        if target is not None:
            data["target"] = target
        super().__init__(**data)

    def __repr__(self) -> str:
        when = ", when=..." if self.when is not None else ""
        return f"Edge({self.source!r} -> {self.target!r}{when})"


class Graph(BaseModel):
    """A small state machine of steps; each state is a Task or an Ensemble (or a Loop/Graph)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)
    step_kind: ClassVar[str] = "graph"
    END: ClassVar[str] = END

    name: str
    start: str
    states: dict[str, Any]
    edges: list[Edge] = Field(default_factory=list)
    max_steps: int = 50
    on_max_steps: Literal["return_last", "fail"] = "return_last"
    feedback: bool = True
    context: list[Any] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _foreign_names(cls, data: Any) -> Any:
        return reject_foreign_names(cls, data)

    @model_validator(mode="after")
    def _structure(self) -> Graph:
        if not self.name.strip():
            raise ConfigurationError("Graph name must be a non-blank string")
        where = f"Graph {self.name!r}"
        check_cap(self.max_steps, "max_steps", where)
        if not self.states:
            raise ConfigurationError(f"{where} has no states: give it at least one")
        names = list(self.states)
        for name in names:
            if not name.strip() or name == END:
                raise ConfigurationError(f"{where}: {name!r} cannot be a state name")
        check_steps(list(self.states.values()), f"{where} states")
        check_steps(self.context, f"{where} context")
        seen: dict[int, str] = {}
        for name, step in self.states.items():
            if id(step) in seen:
                raise ConfigurationError(
                    f"{where}: states {seen[id(step)]!r} and {name!r} are the same object; "
                    "give each state its own step"
                )
            seen[id(step)] = name
        if self.start not in self.states:
            raise ConfigurationError(
                f"{where}: start {self.start!r} is not a state; states: {', '.join(names)}"
            )
        for position, edge in enumerate(self.edges, start=1):
            if edge.source not in self.states:
                raise ConfigurationError(
                    f"{where}: edge {position} comes from {edge.source!r}, which is not a "
                    f"state; states: {', '.join(names)}"
                )
            if edge.target != END and edge.target not in self.states:
                raise ConfigurationError(
                    f"{where}: edge {position} ({edge.source!r} -> {edge.target!r}) leads "
                    f"nowhere: {edge.target!r} is not a state (use Graph.END to finish)"
                )
        sources = {edge.source for edge in self.edges}
        for name in names:
            if name not in sources:
                raise ConfigurationError(
                    f"{where}: state {name!r} has no edge out; add Edge({name!r}, Graph.END) "
                    "if the graph may finish there"
                )
        return self

    @property
    def label(self) -> str:
        return self.name

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, states={list(self.states)}, start={self.start!r})"

    __str__ = __repr__


@dataclass
class GraphStep:
    """A prepared graph: each state's step, prepared once, run at each visit."""

    graph: Graph
    states: dict[str, Step]
    per_step: int = 0

    def __post_init__(self) -> None:
        self.per_step = max(step.capacity for step in self.states.values())

    @property
    def source(self) -> Any:
        return self.graph

    @property
    def capacity(self) -> int:
        return self.per_step * self.graph.max_steps

    async def run(self, call: StepCall) -> StepResult:
        graph = self.graph
        handed = tuple(call.scope.lookup_all(graph.context))
        scope = call.scope.child()  # a state's context naming another state: its latest output
        path: list[str] = []
        latest: dict[str, TaskOutput] = {}
        indices: list[int] = []
        current = graph.start
        cause: TaskOutput | None = call.feedback.cause if call.feedback else None
        stopped_by: Literal["end", "max_steps"] = "max_steps"
        last: TaskOutput | None = None
        for number in range(1, graph.max_steps + 1):
            feedback = call.feedback if number == 1 else None
            if graph.feedback and current in latest and cause is not None:
                feedback = Feedback(previous=latest[current], cause=cause)
            step = self.states[current]
            base = call.base + (number - 1) * self.per_step
            # the state before hands its output on (as revision feedback on a revisit)
            led_here = (cause,) if number > 1 and cause is not None and feedback is None else ()
            context = (*call.context, *handed, *led_here)
            within = (*call.within, f"graph:{graph.name}:{number}:{current}")
            result = await step.run(
                call.at(base, scope=scope, context=context, feedback=feedback, within=within)
            )
            scope.record(step.source, result.outputs)
            indices += result.task_indices
            path.append(current)
            if result.stop:
                return StepResult(result.outputs, True, indices)
            output = result.final or _empty(current)
            latest[current] = last = output
            state = GraphState(number, current, output, dict(latest), list(path))
            edge = await self._next(state, call)
            target = edge.target if edge is not None else None
            call.env.emitter.emit(
                GraphStepCompleted(
                    graph.name,
                    number,
                    current,
                    output,
                    next_state=target,
                    task_indices=tuple(result.task_indices),
                    within=call.within,
                    condition=predicate_name(edge.when) if edge is not None else None,
                )
            )
            if target is None:
                raise step_failure(
                    GraphNoEdgeError(
                        f"Graph {graph.name!r}: no edge out of state {current!r} matched after "
                        f"step {number}; add an edge without when (or to Graph.END) from it",
                        graph_name=graph.name,
                        state=current,
                        path=path,
                        task=graph,
                        completed_outputs=call.state.ordered()[0],
                    )
                )
            if target == END:
                stopped_by = "end"
                break
            cause, current = output, target
        call.state.graphs[graph.name] = GraphResult(
            path=path, stopped_by=stopped_by, outputs=dict(latest)
        )
        if stopped_by == "max_steps" and graph.on_max_steps == "fail":
            raise step_failure(
                GraphMaxStepsError(
                    f"Graph {graph.name!r} ran max_steps={graph.max_steps} states without "
                    f"reaching Graph.END (path: {' -> '.join(path)})",
                    graph_name=graph.name,
                    path=path,
                    task=graph,
                    completed_outputs=call.state.ordered()[0],
                )
            )
        return StepResult([last] if last is not None else [], False, indices)

    async def _next(self, state: GraphState, call: StepCall) -> Edge | None:
        """The first edge out of ``state`` whose ``when`` holds (None when none does)."""
        for edge in self.graph.edges:
            if edge.source != state.state:
                continue
            if edge.when is None:
                return edge
            try:
                if await call_predicate(edge.when, state):
                    return edge
            except Exception as error:
                raise predicate_failure(
                    f"Graph {self.graph.name!r}: the when of edge {edge.source!r} -> "
                    f"{edge.target!r} (after step {state.step})",
                    error,
                    self.graph,
                    call,
                ) from error
        return None


def _empty(state: str) -> TaskOutput:
    """A state that produced nothing (a fan-out over an empty list)."""
    return TaskOutput(raw="", task_description=state, agent_role="")


__all__ = ["END", "Edge", "Graph", "GraphState", "GraphStep"]
