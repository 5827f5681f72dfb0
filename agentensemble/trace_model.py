"""The execution trace: everything a run did, as plain, versioned, JSON-round-trippable data.

Built by ``TraceRecorder`` from the run's events; users read it from ``EnsembleOutput.trace``
(or ``TaskExecutionError.trace``), save it, and load it back with ``ExecutionTrace.from_json``.
Secrets are redacted before anything enters a trace. Times are UTC; durations are seconds.
The JSON Schema lives in ``docs/trace.schema.json`` (a test keeps it in step with this module).

Below ``outputs`` (whose ``EnsembleOutput.trace`` holds one) and ``tracing`` (which records it):
``agentensemble.tracing.trace`` re-exports every name, the path users import from.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from agentensemble._base.saveable import SaveableModel
from agentensemble.run_metrics import TaskMetrics

#: Bumped whenever a field is removed or changes meaning; new optional fields keep the version.
#: 2: a task's ``user_prompt`` may be stored as ``user_prompt_ref`` (the start of an earlier
#: task's prompt, then the rest). Version 1 files are read as they are.
SCHEMA_VERSION = 2

Capture = Literal["off", "standard", "full"]


class _Model(SaveableModel):  # saving never fails: odd objects and lone surrogates included
    model_config = ConfigDict(extra="forbid", defer_build=True)


class TokenCounts(_Model):
    """Tokens of one model call, as the provider reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ErrorInfo(_Model):
    """An error as data: its type name and (redacted) message."""

    type: str
    message: str


class RequestedToolCall(_Model):
    """A tool call as the model requested it (arguments verbatim, redacted)."""

    id: str
    name: str
    arguments: str


class ModelTurn(_Model):
    """One model call: what was sent (``messages`` only with capture="full"), what came back."""

    call_id: str
    model: str
    agent_role: str
    started_at: datetime
    latency_seconds: float = 0.0
    attempts: int = 1
    message_count: int = 0
    messages: list[dict[str, Any]] | None = None
    content: str | None = None
    reasoning: str | None = None  # the model's reasoning text (redacted), when shown
    refusal: str | None = None  # the provider's refusal words
    tool_calls: list[RequestedToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: TokenCounts = Field(default_factory=TokenCounts)
    cost_usd: float | None = None
    error: ErrorInfo | None = None


class ToolCallTrace(_Model):
    """One tool call: arguments as run, output, success, duration, return behaviour."""

    call_id: str | None = None
    name: str
    arguments: str = Field(description="as run: after a reviewer's edit, the edited arguments")
    model_arguments: str | None = Field(
        default=None, description="the model's own arguments, when a reviewer's edit changed them"
    )
    started_at: datetime | None = None
    output: str | None = None
    is_success: bool | None = None
    duration_seconds: float = 0.0
    return_behavior: str | None = None


class ReviewTrace(_Model):
    """One review: what was asked, the decision, who decided and how long it took."""

    timing: str
    tool_name: str | None = None
    requested_at: datetime
    prompt: str | None = None
    output: str | None = None
    decision: str | None = None
    decided_by: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    wait_seconds: float | None = None


class DelegationTrace(_Model):
    """Work an agent (or the manager) handed to another agent, and how it ended."""

    from_role: str
    to_role: str
    instructions: str
    depth: int
    started_at: datetime
    duration_seconds: float | None = None
    output: str | None = None
    error: str | None = None


class EventRecord(_Model):
    """An event with no place of its own in the trace (a guardrail check, a newer event type):
    its type name, when it arrived and its fields (redacted, as JSON data)."""

    type: str
    at: datetime
    fields: dict[str, Any] = Field(default_factory=dict)


class GuardrailTrace(_Model):
    """One guardrail check: which, on the input or on which answer, and its verdict."""

    kind: Literal["input", "output"]
    guardrail: str
    passed: bool
    message: str | None = None
    attempt: int = 1
    checked_at: datetime


class PromptRef(_Model):
    """A prompt stored by reference: the first ``length`` characters of the user prompt of
    ``tasks[start_of]`` (an earlier task of the same trace, by position), then ``rest``.

    Task ``n`` of a chain shows every earlier output: its prompt is task ``n - 1``'s context
    plus one section, so each prompt stored whole made the trace quadratic in memory and on
    disk. Read it back as ``TaskTrace.user_prompt``, the exact (redacted) text."""

    start_of: int = Field(ge=0, description="position in tasks[] of an earlier task")
    length: int = Field(ge=0, description="how many characters of that task's prompt")
    rest: str = Field(description="what follows them")


class _Prompt:
    """A prompt in memory: ``length`` characters of ``base`` then ``rest`` (``base`` None and
    ``length`` 0 for a prompt stored whole). Immutable; copies share it, pickles hold the text.
    Equal to any other and to None (a prompt not linked yet): the fields it was made from
    (``PromptRef`` and the tasks it points to) are what two traces compare."""

    __slots__ = ("base", "length", "rest", "size")

    def __init__(self, base: _Prompt | None, length: int, rest: str) -> None:
        self.base, self.length, self.rest = base, length, rest
        self.size = length + len(rest)

    def text(self) -> str:
        """The whole prompt: one pass down the chain of bases, then one join."""
        pieces: list[str] = []
        node: _Prompt | None = self
        end = self.size
        while node is not None and end:
            if end > node.length:
                rest = node.rest
                pieces.append(rest if end - node.length == len(rest) else rest[: end - node.length])
                end = node.length
            node = node.base
        pieces.reverse()
        return "".join(pieces)

    def __eq__(self, other: object) -> bool:
        return other is None or isinstance(other, _Prompt)

    __hash__ = None  # type: ignore[assignment]

    def __copy__(self) -> _Prompt:
        return self

    def __deepcopy__(self, memo: Any) -> _Prompt:
        return self

    def __reduce__(self) -> tuple[type[_Prompt], tuple[None, int, str]]:
        return _Prompt, (None, 0, self.text())  # no chain of bases to recurse through


class TaskTrace(_Model):
    """One task: its agent, exact prompts, model turns, tool calls, reviews, outcome.

    ``user_prompt`` is the exact prompt sent, stored whole (field ``user_prompt``) or by
    reference to an earlier task's (``user_prompt_ref``), which only its ``ExecutionTrace``
    can resolve."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    index: int
    description: str
    agent_role: str
    task_name: str | None = None
    model: str | None = None
    status: Literal["running", "completed", "failed"] = "running"
    started_at: datetime
    ended_at: datetime | None = None
    system_prompt: str | None = None
    user_prompt_whole: str | None = Field(
        default=None, alias="user_prompt", description="the user prompt, when stored whole"
    )
    user_prompt_ref: PromptRef | None = Field(
        default=None,
        exclude_if=lambda ref: ref is None,
        description="the user prompt, when stored by reference (schema 2); absent otherwise",
    )
    model_turns: list[ModelTurn] = Field(default_factory=list)
    tool_calls: list[ToolCallTrace] = Field(default_factory=list)
    reviews: list[ReviewTrace] = Field(default_factory=list)
    delegations: list[DelegationTrace] = Field(default_factory=list)
    events: list[EventRecord] = Field(default_factory=list)
    guardrails: list[GuardrailTrace] = Field(default_factory=list)
    output: str | None = None
    error: ErrorInfo | None = None
    usage: TokenCounts = Field(default_factory=TokenCounts)
    cost_usd: float | None = None
    metrics: TaskMetrics = Field(default_factory=TaskMetrics)
    _prompt: _Prompt | None = PrivateAttr(default=None)  # set by ExecutionTrace, for a ref

    @property
    def user_prompt(self) -> str | None:
        """The exact user prompt sent (redacted as everything in the trace), however stored."""
        if self.user_prompt_ref is None:
            return self.user_prompt_whole
        prompt = self._prompt
        if prompt is None:
            raise ValueError(
                "this task's prompt is stored by reference to an earlier task's: read it "
                "through the ExecutionTrace that holds both"
            )
        return prompt.text()

    def _prompt_node(self) -> _Prompt | None:
        """This task's prompt as a base for a later one's (made for a prompt stored whole)."""
        node = self._prompt
        if node is None and self.user_prompt_whole is not None:
            node = self._prompt = _Prompt(None, 0, self.user_prompt_whole)
        return node


class ExecutionTrace(_Model):
    """A whole run. ``to_json()``/``from_json()`` round-trip exactly; ``save(path)`` writes it."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    parent_run_id: str | None = None
    capture: Capture = "standard"
    status: Literal["running", "completed", "failed"] = "running"
    started_at: datetime
    ended_at: datetime | None = None
    workflow: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    tasks: list[TaskTrace] = Field(default_factory=list)
    events: list[EventRecord] = Field(
        default_factory=list, description="events outside any task, with no place of their own"
    )
    exit_reason: str | None = None
    error: ErrorInfo | None = None
    usage: TokenCounts = Field(default_factory=TokenCounts)
    cost_usd: float | None = None

    @model_validator(mode="after")
    def _resolve_prompts(self) -> ExecutionTrace:
        """Link each prompt stored by reference to the one it starts with. A trace read back is
        hostile input: a reference must name an earlier task (no loops) whose prompt has at
        least ``length`` characters, so a prompt is never longer than the text the trace holds
        (``rest`` strings down one chain of earlier tasks): no expansion beyond the input."""
        if self.schema_version > SCHEMA_VERSION:
            raise ValueError(
                f"trace schema_version {self.schema_version} is newer than this agentensemble "
                f"reads ({SCHEMA_VERSION}): upgrade agentensemble to read it"
            )
        self.schema_version = SCHEMA_VERSION  # a version 1 trace is a version 2 one, saved so
        tasks = self.tasks
        for position, task in enumerate(tasks):
            ref = task.user_prompt_ref
            if ref is None:
                continue
            if task.user_prompt_whole is not None:
                raise ValueError(f"tasks[{position}] has both user_prompt and user_prompt_ref")
            if ref.start_of >= position:
                raise ValueError(
                    f"tasks[{position}].user_prompt_ref.start_of is {ref.start_of}: a prompt "
                    "can only start with an earlier task's prompt"
                )
            base = tasks[ref.start_of]._prompt_node()
            size = base.size if base is not None else 0
            if ref.length > size:
                raise ValueError(
                    f"tasks[{position}].user_prompt_ref.length is {ref.length}, but the prompt of "
                    f"tasks[{ref.start_of}] has {size} characters"
                )
            task._prompt = _Prompt(base if ref.length else None, ref.length, ref.rest)
        return self

    def to_json(self, *, indent: int | None = None) -> str:
        """The trace as JSON text."""
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> ExecutionTrace:
        """Load a trace written by ``to_json``/``save``."""
        return cls.model_validate_json(text)

    def save(self, path: str | Path) -> Path:
        """Write the trace as indented JSON (UTF-8) and return the path."""
        target = Path(path)
        target.write_text(self.to_json(indent=2), encoding="utf-8")
        return target

    def task(self, index: int) -> TaskTrace:
        """The trace of task ``index`` (1-based, as in events)."""
        for task in self.tasks:
            if task.index == index:
                return task
        raise KeyError(f"no task {index} in this trace (tasks: {[t.index for t in self.tasks]})")


__all__ = [
    "SCHEMA_VERSION",
    "Capture",
    "DelegationTrace",
    "ErrorInfo",
    "EventRecord",
    "ExecutionTrace",
    "GuardrailTrace",
    "ModelTurn",
    "PromptRef",
    "RequestedToolCall",
    "ReviewTrace",
    "TaskMetrics",
    "TaskTrace",
    "TokenCounts",
    "ToolCallTrace",
]
