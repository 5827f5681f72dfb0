"""Typed events emitted during a run, and the listener protocol that receives them.

A listener is any object with ``on_event(event)``. Listener errors are logged and swallowed:
observing a run must never break it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from datetime import timedelta
from typing import Any, Protocol, runtime_checkable

from agentensemble._base.dataclass import dataclass
from agentensemble._base.interrupts import ends_the_run
from agentensemble.logging import get_logger
from agentensemble.outputs import EnsembleOutput, TaskOutput, TokenUsage, ToolCallRecord
from agentensemble.run_context import enter_task, read_run_id, read_task_index


def _run_id() -> Any:
    """Every event carries the id of its run, read from the context it is built in."""
    return field(default_factory=read_run_id, kw_only=True)


def _task_index() -> Any:
    """Events inside a task carry its 1-based index (None outside a task)."""
    return field(default_factory=read_task_index, kw_only=True)


@dataclass(frozen=True)
class EnsembleStarted:
    total_tasks: int
    run_id: str = _run_id()
    parent_run_id: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class EnsembleCompleted:
    output: EnsembleOutput
    run_id: str = _run_id()


@dataclass(frozen=True)
class EnsembleFailed:
    """The run failed or was stopped; ``error`` is what the run raises (a ``TaskExecutionError``,
    or ``CancelledError`` / ``KeyboardInterrupt`` when it was cancelled or interrupted)."""

    error: BaseException
    run_id: str = _run_id()


@dataclass(frozen=True)
class TaskStarted:
    task_index: int
    total_tasks: int
    task_description: str
    agent_role: str
    run_id: str = _run_id()
    within: tuple[str, ...] = field(default=(), kw_only=True)
    """Where this task run sits, outermost first: ``"loop:<name>:<iteration>"``,
    ``"graph:<name>:<step>:<state>"``, ``"ensemble:<name>"``, ``"for_each:<task>:<index>"``
    (empty for a top-level task); a timeline groups task runs by it."""


@dataclass(frozen=True)
class TaskCompleted:
    task_index: int
    total_tasks: int
    output: TaskOutput
    run_id: str = _run_id()


@dataclass(frozen=True)
class TaskFailed:
    task_index: int
    total_tasks: int
    task_description: str
    error: BaseException
    run_id: str = _run_id()


@dataclass(frozen=True)
class LLMCallCompleted:
    agent_role: str
    model: str
    duration: timedelta
    usage: TokenUsage
    tool_calls: int
    run_id: str = _run_id()
    task_index: int | None = _task_index()
    task_name: str | None = field(default=None, kw_only=True)
    call_id: str = field(default="", kw_only=True)
    response: Any = field(default=None, kw_only=True)  # the ChatResponse
    attempts: int = field(default=1, kw_only=True)
    cost_usd: float | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class ToolCallCompleted:
    agent_role: str
    task_description: str
    record: ToolCallRecord
    run_id: str = _run_id()
    task_index: int | None = _task_index()
    call_id: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class ReviewRequested:
    timing: str
    task_description: str
    tool_name: str | None = None
    run_id: str = _run_id()
    task_index: int | None = _task_index()
    output: str | None = field(default=None, kw_only=True)
    prompt: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class ReviewDecided:
    timing: str
    task_description: str
    decision: str
    tool_name: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    run_id: str = _run_id()
    task_index: int | None = _task_index()
    decided_by: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class LLMCallStarted:
    """A model call begins; ``messages`` is the conversation sent (a snapshot)."""

    agent_role: str
    model: str
    call_id: str
    task_name: str | None = None
    messages: Sequence[Any] = ()
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class LLMCallFailed:
    """A model call failed for good (after the retry policy gave up)."""

    agent_role: str
    model: str
    call_id: str
    duration: timedelta
    error: BaseException
    task_name: str | None = None
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class ToolCallStarted:
    """A tool call begins, with the arguments as the model sent them."""

    agent_role: str
    task_description: str
    call_id: str
    name: str
    arguments: str
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class TokenDelta:
    """A piece of model text as it is generated (only while streaming, ``Ensemble.astream``)."""

    run_id: str
    agent_role: str
    task_name: str | None
    text: str
    task_index: int | None = _task_index()
    call_id: str = field(default="", kw_only=True)


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning as it is generated (only while streaming, and only from
    providers that show their reasoning). Redacted like everything else; never another agent's
    context."""

    run_id: str
    agent_role: str
    task_name: str | None
    text: str
    task_index: int | None = _task_index()
    call_id: str = field(default="", kw_only=True)


@dataclass(frozen=True)
class PartialOutput:
    """A typed task's output as it forms (only while streaming, ``Ensemble.astream``): the
    validated fields so far of its ``output_type``, a new one each time they change. For a
    model, dataclass or TypedDict ``partial`` is a ``dict`` by field name; for a list or dict,
    the items so far. Starts over with each model call (``call_id``); the final value is
    ``TaskCompleted.output.parsed``."""

    run_id: str
    task_name: str | None
    partial: Any
    task_index: int | None = _task_index()
    agent_role: str = field(default="", kw_only=True)
    call_id: str = field(default="", kw_only=True)


@dataclass(frozen=True)
class StreamRestarted:
    """A stream broke mid-way and is retried from the start: drop the text shown so far."""

    agent_role: str
    task_name: str | None
    attempt: int
    call_id: str = ""
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class GuardrailChecked:
    """One guardrail ran: ``kind`` is "input" or "output"; ``attempt`` counts answers checked."""

    kind: str
    guardrail: str
    passed: bool
    task_description: str
    agent_role: str
    message: str | None = None
    attempt: int = 1
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class DelegationStarted:
    """An agent (or the manager) handed work to another agent."""

    from_role: str
    to_role: str
    instructions: str
    depth: int
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class DelegationCompleted:
    """The delegated agent finished; ``output`` is what it answered."""

    from_role: str
    to_role: str
    output: TaskOutput
    depth: int
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class DelegationFailed:
    """The delegation failed (unknown role, depth limit, or the agent's own failure)."""

    from_role: str
    to_role: str
    error: str
    depth: int
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class LoopIterationCompleted:
    """One iteration of a ``Loop`` ended (after its tasks' events, before the next iteration's).

    ``outputs``: this iteration's outputs by body step name; ``task_indices``: the
    ``task_index`` of every task run of the iteration, in order (a timeline groups them);
    ``stopped_by``: "until" or "max_iterations" when this iteration was the last, else None.
    """

    loop_name: str
    iteration: int
    outputs: dict[str, TaskOutput]
    run_id: str = _run_id()
    task_indices: tuple[int, ...] = field(default=(), kw_only=True)
    stopped_by: str | None = field(default=None, kw_only=True)
    within: tuple[str, ...] = field(default=(), kw_only=True)
    """Where the loop sits (as ``TaskStarted.within``): empty for a top-level loop."""
    condition: str | None = field(default=None, kw_only=True)
    """The name of the loop's ``until`` (None without one): what a run page says was checked."""

    def trace_fields(self) -> dict[str, Any]:
        """What the trace and spans keep: the outputs are there already, under their tasks."""
        return {
            "loop_name": self.loop_name,
            "iteration": self.iteration,
            "steps": list(self.outputs),
            "task_indices": list(self.task_indices),
            "stopped_by": self.stopped_by,
            "within": list(self.within),
            "condition": self.condition,
        }


@dataclass(frozen=True)
class GraphStepCompleted:
    """One state of a ``Graph`` ran (``step`` is 1-based) and the next state was chosen.

    ``next_state`` is the state the first matching edge leads to (``Graph.END`` at the end;
    None when the run stops here: no edge matched or ``max_steps`` was reached);
    ``task_indices``: the ``task_index`` of every task run of this step, in order.
    """

    graph_name: str
    step: int
    state: str
    output: TaskOutput
    run_id: str = _run_id()
    next_state: str | None = field(default=None, kw_only=True)
    task_indices: tuple[int, ...] = field(default=(), kw_only=True)
    within: tuple[str, ...] = field(default=(), kw_only=True)
    """Where the graph sits (as ``TaskStarted.within``): empty for a top-level graph."""
    condition: str | None = field(default=None, kw_only=True)
    """The name of the ``when`` of the edge taken (None for an edge without ``when``, or when
    no edge matched): what a run page says chose the next state."""

    def trace_fields(self) -> dict[str, Any]:
        """What the trace and spans keep: the output is there already, under its task."""
        return {
            "graph_name": self.graph_name,
            "step": self.step,
            "state": self.state,
            "next_state": self.next_state,
            "task_indices": list(self.task_indices),
            "within": list(self.within),
            "condition": self.condition,
        }


@dataclass(frozen=True)
class MemoryRetrieved:
    """What memory, knowledge and the session showed an agent before its task.

    ``items`` are the retrieved entries (source, scope, id, text, score, metadata), best first;
    ``history_messages`` counts the session messages replayed. A run page shows these beside the
    task: everything it needs is here (texts are redacted in the trace like any other field).
    """

    agent_role: str
    task_name: str | None
    task_description: str
    query: str
    scopes: list[str]
    items: list[Any]
    session: str | None = None
    history_messages: int = 0
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class ToolCallTimedOut:
    """A tool body ran past its ``timeout`` (``@tool(timeout=...)``): it was cancelled (async)
    or abandoned in its thread (sync); the call fails with "timed out after N s", or runs again
    when the tool has ``retries`` left. Its ``ToolCallCompleted`` follows as usual."""

    agent_role: str
    task_description: str
    tool_name: str
    timeout: float
    run_id: str = _run_id()
    task_index: int | None = _task_index()


@dataclass(frozen=True)
class ContextCompacted:
    """A task's conversation was shortened to fit its model's window (``ContextPolicy``):
    ``reason`` ``"window"`` (before a call, by our count) or ``"provider_error"`` (after the
    provider refused the prompt as too long, before the one retry). Token counts include the
    tool specs; ``tool_results_elided`` old results became placeholders,
    ``messages_summarized`` were replaced by one summary, ``messages_dropped`` were removed.
    When the head itself was over, one more event per step: ``history_dropped`` session-history
    messages removed, ``context_outputs_summarized`` / ``context_outputs_cut`` earlier tasks'
    outputs summarised or cut."""

    agent_role: str
    task_name: str | None
    model: str
    reason: str
    limit: int
    tokens_before: int
    tokens_after: int
    tool_results_elided: int = 0
    messages_dropped: int = 0
    messages_summarized: int = 0
    history_dropped: int = 0
    context_outputs_summarized: int = 0
    context_outputs_cut: int = 0
    run_id: str = _run_id()
    task_index: int | None = _task_index()


EnsembleEvent = (
    EnsembleStarted
    | EnsembleCompleted
    | EnsembleFailed
    | TaskStarted
    | TaskCompleted
    | TaskFailed
    | LLMCallStarted
    | LLMCallCompleted
    | LLMCallFailed
    | ToolCallStarted
    | ToolCallCompleted
    | ReviewRequested
    | ReviewDecided
    | GuardrailChecked
    | TokenDelta
    | ReasoningDelta
    | StreamRestarted
    | PartialOutput
    | DelegationStarted
    | DelegationCompleted
    | DelegationFailed
    | LoopIterationCompleted
    | GraphStepCompleted
    | MemoryRetrieved
    | ToolCallTimedOut
    | ContextCompacted
)


@runtime_checkable
class EnsembleListener(Protocol):
    """Receives every event of a run, in order, on the run's thread."""

    def on_event(self, event: EnsembleEvent) -> None: ...


class EventEmitter:
    """Delivers events to listeners; a failing listener is logged, never fatal."""

    def __init__(self, listeners: Sequence[EnsembleListener] = ()) -> None:
        self._listeners = list(listeners)

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def emit(self, event: EnsembleEvent) -> None:
        if isinstance(event, TaskStarted):
            enter_task(event.task_index)  # what follows in this context belongs to the task
        for listener in self._listeners:
            try:
                listener.on_event(event)
            except BaseException as exc:  # a listener must never break a run (SystemExit too)
                if ends_the_run(exc):
                    raise
                get_logger().warning(  # built here: a logger per run cost every run
                    "listener failed", listener=type(listener).__name__, error=str(exc)
                )


__all__ = [
    "ContextCompacted",
    "DelegationCompleted",
    "DelegationFailed",
    "DelegationStarted",
    "EnsembleCompleted",
    "EnsembleEvent",
    "EnsembleFailed",
    "EnsembleListener",
    "EnsembleStarted",
    "EventEmitter",
    "GraphStepCompleted",
    "GuardrailChecked",
    "LLMCallCompleted",
    "LLMCallFailed",
    "LLMCallStarted",
    "LoopIterationCompleted",
    "MemoryRetrieved",
    "PartialOutput",
    "ReasoningDelta",
    "ReviewDecided",
    "ReviewRequested",
    "StreamRestarted",
    "TaskCompleted",
    "TaskFailed",
    "TaskStarted",
    "TokenDelta",
    "ToolCallCompleted",
    "ToolCallStarted",
    "ToolCallTimedOut",
]
