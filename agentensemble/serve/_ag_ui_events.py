"""A run's events as AG-UI events, and the run's state the front end sees.

``RunState`` is what ``STATE_SNAPSHOT`` carries and ``STATE_DELTA`` (JSON Patch) changes: the
run's status, its tasks (started, done or failed, each one's output so far) and its reviews
(pending, then decided, with who decided). ``Translator`` turns ensemble events into AG-UI
events for one HTTP stream: a step per task, a text message per model call (from the run's
token deltas; a task whose model did not stream gets its output as one message), a tool call
(start, arguments, end) per call and its result. It tracks what it opened, so a stream that
ends at an interrupt closes every open message and step first (the AG-UI client refuses a
``RUN_FINISHED`` while any is open), and the stream that resumes opens the running steps again.

Every text leaving here passes the redaction policy. Model text is redacted word by word (the
last, unfinished word is held back until the next delta), so a key or a registered secret is
caught whole (up to ``MAX_HELD_CHARS``); a pattern spanning words is caught in the task's output
in the state.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from agentensemble import events as _events
from agentensemble.events import (
    LLMCallCompleted,
    LLMCallFailed,
    StreamRestarted,
    TaskCompleted,
    TaskFailed,
    TaskStarted,
    TokenDelta,
    ToolCallCompleted,
    ToolCallStarted,
)
from agentensemble.logging import redact, redact_text

_PARTIAL_OUTPUT: type[Any] | None = getattr(_events, "PartialOutput", None)
#: The most model text held back waiting for a word's end (a text without spaces streams on).
MAX_HELD_CHARS = 256
#: The longest text of a task output, tool argument or tool result sent (characters).
MAX_SHOWN_CHARS = 8_000
_CUT = " ... (truncated)"
#: The longest tool name or tool call id sent (characters).
MAX_ID_CHARS = 200


def bounded(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` redacted, then cut to ``limit`` characters."""
    safe = redact_text(text)
    return safe if len(safe) <= limit else safe[: limit - len(_CUT)] + _CUT


def shown_id(text: str) -> str:
    """A tool's name or a tool call's id as a front end reads it: both come from the model's
    reply (a name the crew has no tool of, an id the provider or model chose), so they are
    redacted and bounded like every text leaving here; the same id gives the same text, so
    a call's start, arguments, result and interrupt still match."""
    return bounded(text, MAX_ID_CHARS)


def _first_line(text: str, limit: int = 120) -> str:
    lines = text.strip().splitlines()
    first = lines[0] if lines else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


class RunState:
    """The run as the front end sees it (``snapshot``), changed by ``patch`` operations."""

    def __init__(self) -> None:
        self.status = "running"
        self.tasks: list[dict[str, Any]] = []
        self.reviews: list[dict[str, Any]] = []
        self.done = 0
        self.total = 0
        self.streamed: set[int] = set()  # task indices whose model text streamed (any stream)

    def snapshot(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "tasksTotal": self.total,
            "tasksDone": self.done,
            "tasks": [dict(task) for task in self.tasks],
            "reviews": [dict(review) for review in self.reviews],
        }

    def set_status(self, status: str) -> list[dict[str, Any]]:
        self.status = status
        return [{"op": "replace", "path": "/status", "value": status}]

    def task_started(self, event: TaskStarted) -> tuple[int, list[dict[str, Any]]]:
        task = {
            "index": event.task_index,
            "description": bounded(_first_line(event.task_description)),
            "agent": bounded(event.agent_role, 200),
            "status": "running",
        }
        self.tasks.append(task)
        ops: list[dict[str, Any]] = [{"op": "add", "path": "/tasks/-", "value": dict(task)}]
        if event.total_tasks != self.total:
            self.total = event.total_tasks
            ops.append({"op": "replace", "path": "/tasksTotal", "value": self.total})
        return len(self.tasks) - 1, ops

    def task_ended(self, position: int, status: str, output: str | None) -> list[dict[str, Any]]:
        task = self.tasks[position]
        task["status"] = status
        ops: list[dict[str, Any]] = [
            {"op": "replace", "path": f"/tasks/{position}/status", "value": status}
        ]
        if output is not None:
            task["output"] = output
            ops.append({"op": "add", "path": f"/tasks/{position}/output", "value": output})
        if status == "done":
            self.done += 1
            ops.append({"op": "replace", "path": "/tasksDone", "value": self.done})
        return ops

    def review_added(self, review: dict[str, Any]) -> list[dict[str, Any]]:
        self.reviews.append(review)
        return [{"op": "add", "path": "/reviews/-", "value": dict(review)}]

    def review_decided(self, review_id: str, outcome: dict[str, Any]) -> list[dict[str, Any]]:
        for position, review in enumerate(self.reviews):
            if review["id"] == review_id:
                review.update(outcome)
                return [
                    {"op": "add", "path": f"/reviews/{position}/{key}", "value": value}
                    for key, value in outcome.items()
                ]
        return []

    def running_steps(self) -> list[tuple[int, int]]:
        """(task index, position) of every task still running."""
        return [(t["index"], i) for i, t in enumerate(self.tasks) if t["status"] == "running"]


def step_name(index: int, description: str) -> str:
    return f"task {index}: {description}"


class Translator:
    """Ensemble events to AG-UI events for one stream (see the module docstring)."""

    def __init__(self, state: RunState, ag: Any) -> None:
        self.state = state
        self.ag = ag  # the ag_ui.core module
        self._messages: dict[str, tuple[str, str]] = {}  # model call id -> (message id, held)
        self._steps: dict[int, list[tuple[str, int]]] = {}  # task index -> (step, position)
        self._active_steps: set[str] = set()
        self._handlers: dict[type[Any], Callable[[Any], list[Any]]] = {
            TaskStarted: self._task_started,
            TaskCompleted: self._task_completed,
            TaskFailed: self._task_failed,
            TokenDelta: self._token,
            LLMCallCompleted: self._call_ended,
            LLMCallFailed: self._call_ended,
            StreamRestarted: self._call_ended,
            ToolCallStarted: self._tool_started,
            ToolCallCompleted: self._tool_completed,
        }
        if _PARTIAL_OUTPUT is not None:  # events.py's typed-output-as-it-forms event
            self._handlers[_PARTIAL_OUTPUT] = self._partial

    def translate(self, event: Any) -> list[Any]:
        handler = self._handlers.get(type(event))
        return handler(event) if handler is not None else []

    def _partial(self, event: Any) -> list[Any]:
        """Typed output as it forms (``PartialOutput``): a ``CUSTOM`` event."""
        value = {"taskName": event.task_name, "partial": redact(_jsonable(event.partial))}
        return [self.ag.CustomEvent(name="agentensemble.partial_output", value=value)]

    def delta(self, ops: list[dict[str, Any]]) -> list[Any]:
        return [self.ag.StateDeltaEvent(delta=ops)] if ops else []

    # -- steps

    def _open_step(self, index: int, position: int) -> list[Any]:
        name = step_name(index, self.state.tasks[position]["description"])
        if name in self._active_steps:  # the same task again (a fan-out item): a unique name
            name = f"{name} #{position + 1}"
        self._active_steps.add(name)
        self._steps.setdefault(index, []).append((name, position))
        return [self.ag.StepStartedEvent(step_name=name)]

    def _close_step(self, index: int) -> tuple[list[Any], int | None]:
        open_steps = self._steps.get(index)
        if not open_steps:
            return [], self._position_of(index)
        name, position = open_steps.pop(0)
        self._active_steps.discard(name)
        return [self.ag.StepFinishedEvent(step_name=name)], position

    def _position_of(self, index: int) -> int | None:
        running = [p for i, p in self.state.running_steps() if i == index]
        return running[0] if running else None

    def _task_started(self, event: TaskStarted) -> list[Any]:
        position, ops = self.state.task_started(event)
        return [*self._open_step(event.task_index, position), *self.delta(ops)]

    def _task_completed(self, event: TaskCompleted) -> list[Any]:
        events: list[Any] = []
        text = bounded(event.output.raw)
        if event.task_index not in self.state.streamed and text:  # the model did not stream it
            message_id = str(uuid.uuid4())
            events += [
                self.ag.TextMessageStartEvent(message_id=message_id, role="assistant"),
                self.ag.TextMessageContentEvent(message_id=message_id, delta=text),
                self.ag.TextMessageEndEvent(message_id=message_id),
            ]
        closed, position = self._close_step(event.task_index)
        events += closed
        if position is not None:
            events += self.delta(self.state.task_ended(position, "done", text))
        return events

    def _task_failed(self, event: TaskFailed) -> list[Any]:
        closed, position = self._close_step(event.task_index)
        if position is None:
            return closed
        return [*closed, *self.delta(self.state.task_ended(position, "failed", None))]

    # -- model text

    def _token(self, event: TokenDelta) -> list[Any]:
        if event.task_index is not None:
            self.state.streamed.add(event.task_index)
        events: list[Any] = []
        opened = self._messages.get(event.call_id)
        if opened is None:
            opened = (str(uuid.uuid4()), "")
            events.append(self.ag.TextMessageStartEvent(message_id=opened[0], role="assistant"))
        message_id, held = opened
        text = held + event.text
        cut = max(text.rfind(" "), text.rfind("\n"))
        ready, held = (text[: cut + 1], text[cut + 1 :]) if cut >= 0 else ("", text)
        if len(held) > MAX_HELD_CHARS:
            ready, held = ready + held, ""
        self._messages[event.call_id] = (message_id, held)
        if ready:
            events.append(
                self.ag.TextMessageContentEvent(message_id=message_id, delta=redact_text(ready))
            )
        return events

    def _end_message(self, call_id: str) -> list[Any]:
        opened = self._messages.pop(call_id, None)
        if opened is None:
            return []
        message_id, held = opened
        events: list[Any] = []
        if held:
            events.append(
                self.ag.TextMessageContentEvent(message_id=message_id, delta=redact_text(held))
            )
        events.append(self.ag.TextMessageEndEvent(message_id=message_id))
        return events

    def _call_ended(self, event: Any) -> list[Any]:
        return self._end_message(event.call_id)

    # -- tools

    def _tool_started(self, event: ToolCallStarted) -> list[Any]:
        ag = self.ag
        call_id = shown_id(event.call_id)
        events: list[Any] = [
            ag.ToolCallStartEvent(tool_call_id=call_id, tool_call_name=shown_id(event.name))
        ]
        if event.arguments:
            arguments = bounded(event.arguments)
            events.append(ag.ToolCallArgsEvent(tool_call_id=call_id, delta=arguments))
        events.append(ag.ToolCallEndEvent(tool_call_id=call_id))
        return events

    def _tool_completed(self, event: ToolCallCompleted) -> list[Any]:
        if not event.call_id:
            return []
        return [
            self.ag.ToolCallResultEvent(
                message_id=str(uuid.uuid4()),
                tool_call_id=shown_id(event.call_id),
                content=bounded(event.record.output),
                role="tool",
            )
        ]

    # -- a stream's ends

    def close_all(self) -> list[Any]:
        """Close every open message and step (before ``RUN_FINISHED`` or ``RUN_ERROR``)."""
        events: list[Any] = []
        for call_id in list(self._messages):
            events += self._end_message(call_id)
        for index in list(self._steps):
            while self._steps.get(index):
                events += self._close_step(index)[0]
        return events

    def reopen(self) -> list[Any]:
        """Open a step for every task still running (a resumed stream)."""
        events: list[Any] = []
        for index, position in self.state.running_steps():
            events += self._open_step(index, position)
        return events


def _jsonable(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return value


__all__ = ["MAX_SHOWN_CHARS", "RunState", "Translator", "bounded", "shown_id", "step_name"]
