"""``TraceRecorder``: a listener that builds a run's ``ExecutionTrace`` and metrics from events.

It never reaches into the workflow or the executor: whatever a workflow emits lands in the
trace. Events are attributed to tasks by the ``task_index`` they carry; reviews before a task
belong to the next task that starts. Text is redacted before it is stored. ``capture="off"``
keeps only per-task metrics; ``"standard"`` everything but each turn's messages; ``"full"`` all.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import Any

from pydantic import ValidationError

from agentensemble._base.deferred import Deferred
from agentensemble._base.prompt_layout import context_end
from agentensemble.events import (
    DelegationCompleted,
    DelegationFailed,
    DelegationStarted,
    EnsembleCompleted,
    EnsembleEvent,
    EnsembleFailed,
    EnsembleStarted,
    GuardrailChecked,
    LLMCallCompleted,
    LLMCallFailed,
    LLMCallStarted,
    PartialOutput,
    ReasoningDelta,
    ReviewDecided,
    ReviewRequested,
    StreamRestarted,
    TaskCompleted,
    TaskFailed,
    TaskStarted,
    TokenDelta,
    ToolCallCompleted,
    ToolCallStarted,
)
from agentensemble.llm.cost import add_costs
from agentensemble.logging import get_logger, redact_text
from agentensemble.outputs import EnsembleOutput, TaskMetrics
from agentensemble.redaction import starts_alike
from agentensemble.tracing._records import (
    Record,
    counts,
    error_record,
    event_record,
    json_safe,
    now,
    text,
    with_datetimes,
)
from agentensemble.tracing._state import OpenReview, TaskState
from agentensemble.tracing.trace import Capture, ExecutionTrace

_log = get_logger()


class TraceRecorder:
    """Listens to one run's events; ``complete``/``fail`` hand back the trace and metrics.

    During the run the trace is kept as plain dicts (cheap to build and change on every turn);
    it is validated into an ``ExecutionTrace`` once, when the run ends.
    """

    def __init__(
        self,
        run_id: str,
        *,
        capture: Capture = "standard",
        workflow: str = "sequential",
        inputs: dict[str, Any] | None = None,
        parent_run_id: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.capture = capture
        self._lock = threading.Lock()
        self._tasks: dict[int, TaskState] = {}
        self._order: list[int] = []
        self._turns: dict[str, Record] = {}
        self._tools: dict[str, Record] = {}
        self._open_reviews: list[OpenReview] = []
        self._waiting_reviews: list[OpenReview] = []  # asked before their task started
        self._workflow = workflow
        self._by_output: dict[int, int] = {}
        self._messages: dict[int, tuple[Any, Any]] = {}
        self._delegations: list[tuple[float, Record]] = []
        self._safe_arguments: dict[str, str] = {}
        self._closed = False
        self._trace: Record | None = None
        self._prompts: tuple[tuple[int, str, int], ...] = ()  # see _user_prompt
        if capture != "off":
            self._trace = {
                "run_id": run_id,
                "parent_run_id": parent_run_id,
                "capture": capture,
                "started_at": now(),
                "workflow": workflow,
                "inputs": json_safe(dict(inputs)) if inputs else {},
                "tasks": [],
            }

    # -- events -------------------------------------------------------------------------------

    def on_event(self, event: EnsembleEvent) -> None:
        handler = _HANDLERS.get(type(event), TraceRecorder._other)
        if handler is None:  # known and kept elsewhere: no lock taken
            return
        if getattr(event, "run_id", self.run_id) != self.run_id:
            return  # a nested run's events are its own recorder's business
        with self._lock:
            if not self._closed:
                handler(self, event)

    def _other(self, event: Any) -> None:
        """An event with no place of its own: kept as an EventRecord, under its task if any."""
        if self._trace is None:
            return
        index = getattr(event, "task_index", None)
        task = self._tasks.get(index) if isinstance(index, int) else None
        holder = task.record if task is not None and task.record is not None else self._trace
        holder.setdefault("events", []).append(event_record(event))

    def _delegation_started(self, event: DelegationStarted) -> None:
        task = self._task_for(event.task_index, event.from_role)
        if task is None or task.record is None:
            return
        record: Record = {
            "from_role": event.from_role,
            "to_role": event.to_role,
            "instructions": redact_text(event.instructions),
            "depth": event.depth,
            "started_at": now(),
        }
        task.record.setdefault("delegations", []).append(record)
        self._delegations.append((time.perf_counter(), record))

    def _delegation_ended(self, event: DelegationCompleted | DelegationFailed) -> None:
        key = (event.from_role, event.to_role, event.depth)
        for position, (started, record) in enumerate(self._delegations):
            if (record["from_role"], record["to_role"], record["depth"]) == key:
                del self._delegations[position]
                record["duration_seconds"] = time.perf_counter() - started
                if isinstance(event, DelegationCompleted):
                    record["output"] = redact_text(event.output.raw)
                else:
                    record["error"] = redact_text(event.error)
                return
        if isinstance(event, DelegationFailed):  # refused before it started (unknown role...)
            self._other(event)

    def _task_started(self, event: TaskStarted) -> None:
        task = TaskState()
        if self._trace is not None:
            task.record = {
                "index": event.task_index,
                "description": redact_text(event.task_description),
                "agent_role": event.agent_role,
                "started_at": now(),
                "model_turns": [],
                "tool_calls": [],
                "reviews": [],
                "guardrails": [],
            }
            task.position = len(self._trace["tasks"])
            self._trace["tasks"].append(task.record)
        self._tasks[event.task_index] = task
        self._order.append(event.task_index)
        for review in self._reviews_before(event.task_description):
            review.task_index = event.task_index
            task.metrics.review_wait_seconds += review.wait
            if review.record is not None and task.record is not None:
                task.record["reviews"].append(review.record)

    def _reviews_before(self, description: str) -> list[OpenReview]:
        """The reviews asked before this task started: those about its description (as asked,
        or as a reviewer edited it); in a sequential run, whatever is waiting."""
        if not self._waiting_reviews:  # most runs: no reviewer
            return []
        mine = [r for r in self._waiting_reviews if description in (r.key[2], r.revised)]
        if not mine and self._workflow == "sequential":
            mine = list(self._waiting_reviews)
        self._waiting_reviews = [r for r in self._waiting_reviews if r not in mine]
        return mine

    def _task_for(self, index: int | None, agent_role: str | None = None) -> TaskState | None:
        if index is not None and index in self._tasks:
            return self._tasks[index]
        running = [self._tasks[i] for i in reversed(self._order)]
        for task in running:  # no index: the latest task of that agent
            if task.record is not None and task.record["agent_role"] == agent_role:
                return task
        return running[0] if running else None

    def _task_completed(self, event: TaskCompleted) -> None:
        task = self._task_for(event.task_index)
        if task is None:
            return
        self._by_output[id(event.output)] = event.task_index
        if task.record is not None:
            output = event.output
            task.record.update(
                status="completed",
                ended_at=now(),
                output=redact_text(output.raw),
                usage=counts(output.usage),
                cost_usd=output.cost_usd,
                task_name=output.task_name,
                description=redact_text(output.task_description),
            )

    def _task_failed(self, event: TaskFailed) -> None:
        task = self._task_for(event.task_index)
        if task is not None and task.record is not None:
            task.record.update(status="failed", ended_at=now(), error=error_record(event.error))

    def _llm_started(self, event: LLMCallStarted) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None or task.record is None:
            return
        record = task.record
        messages = event.messages
        if "system_prompt" not in record and len(messages) >= 2:
            record["system_prompt"] = text(messages[0].get("content"))
            self._user_prompt(record, task.position, text(messages[1].get("content")))
            record["model"] = event.model
            record["task_name"] = event.task_name
        turn: Record = {
            "call_id": event.call_id,
            "model": event.model,
            "agent_role": event.agent_role,
            "started_at": now(),  # a stamp: a datetime when the trace is built
            "message_count": len(messages),
        }
        if self.capture == "full":
            turn["messages"] = [self._message(m) for m in messages]
        record["model_turns"].append(turn)
        self._turns[event.call_id] = turn

    def _user_prompt(self, record: Record, position: int, prompt: str | None) -> None:
        """The task's prompt (redacted), stored by reference when it starts with the context of
        a recent earlier task's prompt (a chain: every earlier output, then one more), whole
        otherwise. The trace then holds each output once, not once per later task: the stored
        text is slices of this very string, which the trace gives back joined."""
        if prompt is None or len(prompt) < _SHARED_FROM:
            record["user_prompt"] = prompt
            return
        for start_of, earlier, shared in self._prompts:
            if start_of < position and starts_alike(prompt, earlier, shared):
                record["user_prompt_ref"] = {
                    "start_of": start_of,
                    "length": shared,
                    "rest": prompt[shared:],
                }
                break
        else:
            record["user_prompt"] = prompt
        end = context_end(prompt)
        if end >= _SHARED_FROM:  # a few are kept: tasks of a parallel run interleave
            self._prompts = ((position, prompt, end), *self._prompts[: _PROMPTS_KEPT - 1])

    def _arguments(self, arguments: str) -> str:
        """Tool arguments redacted once: the same text arrives with the model's turn, the
        call's start and its end."""
        safe = self._safe_arguments.get(arguments)
        if safe is None:
            safe = self._safe_arguments[arguments] = redact_text(arguments)
        return safe

    def _message(self, message: Any) -> Any:
        """A message made safe once: the history resends the same message objects each turn."""
        cached = self._messages.get(id(message))
        if cached is None or cached[0] is not message:
            cached = (message, json_safe(message))
            self._messages[id(message)] = cached
        return cached[1]

    def _llm_completed(self, event: LLMCallCompleted) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None:
            return
        latency = event.duration.total_seconds()
        attempts = event.attempts
        metrics = task.metrics
        metrics.model_seconds += latency
        if attempts > 1:
            metrics.retries += attempts - 1
        turn = self._turns.pop(event.call_id, None)
        if turn is None:
            return
        turn.update(
            model=event.model,  # who answered: a fallback chain's model, not the chain
            latency_seconds=latency,
            attempts=attempts,
            usage=counts(event.usage),
            cost_usd=event.cost_usd,
        )
        response = event.response
        if response is not None:
            turn["content"] = text(response.content)
            if getattr(response, "reasoning", None):  # redacted, as the content is
                turn["reasoning"] = text(response.reasoning)
            if getattr(response, "refusal", None):
                turn["refusal"] = text(response.refusal)
            reason = response.finish_reason  # from the provider: hostile until checked
            turn["finish_reason"] = reason if isinstance(reason, str) else None
            turn["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": self._arguments(c.arguments)}
                for c in response.tool_calls
            ]

    def _llm_failed(self, event: LLMCallFailed) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None:
            return
        task.metrics.model_seconds += event.duration.total_seconds()
        attempts = getattr(event.error, "attempts", 1)
        attempts = attempts if isinstance(attempts, int) and attempts > 0 else 1
        task.metrics.retries += attempts - 1
        turn = self._turns.pop(event.call_id, None)
        if turn is not None:
            turn.update(
                latency_seconds=event.duration.total_seconds(),
                attempts=attempts,
                error=error_record(event.error),
            )

    def _tool_started(self, event: ToolCallStarted) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None or task.record is None:
            return
        call: Record = {
            "call_id": event.call_id,
            "name": event.name,
            "arguments": self._arguments(event.arguments),
            "started_at": now(),
        }
        task.record["tool_calls"].append(call)
        self._tools[event.call_id] = call

    def _tool_completed(self, event: ToolCallCompleted) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None:
            return
        record = event.record
        task.metrics.tool_seconds += record.duration.total_seconds()
        if task.record is None:
            return
        call = self._tools.pop(event.call_id or "", None)
        if call is None:  # never started (over the tool-call limit): recorded as refused
            call = {"call_id": event.call_id, "name": record.name}
            task.record["tool_calls"].append(call)
        call.update(
            arguments=self._arguments(record.arguments),
            model_arguments=text(getattr(record, "model_arguments", None)),
            output=redact_text(record.output),
            is_success=record.is_success,
            duration_seconds=record.duration.total_seconds(),
            return_behavior=record.return_behavior.value,
        )

    def _review_requested(self, event: ReviewRequested) -> None:
        record: Record | None = None
        if self._trace is not None:
            record = {
                "timing": event.timing,
                "tool_name": event.tool_name,
                "requested_at": now(),
                "prompt": text(event.prompt),
                "output": text(event.output),
            }
        key = (event.timing, event.tool_name, event.task_description)
        before = event.timing == "before_execution"
        review = OpenReview(None if before else event.task_index, key, time.perf_counter(), record)
        self._open_reviews.append(review)
        if before:
            self._waiting_reviews.append(review)
            return
        task = self._task_for(event.task_index)
        if task is not None and task.record is not None and record is not None:
            task.record["reviews"].append(record)

    def _review_decided(self, event: ReviewDecided) -> None:
        key = (event.timing, event.tool_name, event.task_description)
        review = next((r for r in self._open_reviews if r.key == key), None)
        if review is None:
            return
        self._open_reviews.remove(review)
        wait = time.perf_counter() - review.started
        review.wait = wait
        revised = event.details.get("revised_output") if event.details else None
        review.revised = revised if isinstance(revised, str) else None
        task = self._tasks.get(review.task_index) if review.task_index is not None else None
        if task is not None:
            task.metrics.review_wait_seconds += wait
        if review.record is not None:
            review.record.update(
                decision=event.decision,
                decided_by=event.decided_by,
                details=json_safe(event.details),
                wait_seconds=wait,
            )

    def _guardrail_checked(self, event: GuardrailChecked) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is not None and task.record is not None:
            task.record["guardrails"].append(
                {
                    "kind": event.kind,
                    "guardrail": event.guardrail,
                    "passed": event.passed,
                    "message": text(event.message),
                    "attempt": event.attempt,
                    "checked_at": now(),
                }
            )

    # -- results ------------------------------------------------------------------------------

    def metrics_for(self, index: int) -> TaskMetrics:
        task = self._tasks.get(index)
        return task.metrics.metrics() if task is not None else TaskMetrics()

    def complete(self, output: EnsembleOutput, **fields: Any) -> EnsembleOutput:
        """``output`` with per-task metrics, the total cost and (unless off) the trace; and
        ``fields``, the run's own (its id, tool metrics): one copy of the output per run.

        The trace is validated on its first read (``_base/deferred.py``): most runs' traces are
        never read, and validating the recorded dicts was most of what the trace cost a run."""
        with self._lock:
            outputs = [
                o.model_copy(update={"metrics": self.metrics_for(self._by_output[id(o)])})
                if id(o) in self._by_output
                else o
                for o in output.task_outputs
            ]
            priced = [o.cost_usd for o in outputs if o.llm_calls]
            priced += output._extra_costs  # model calls no task output holds (a manager's)
            cost = add_costs(priced) if priced else None
            record = self._finished(
                status="completed",
                usage=counts(output.usage),
                cost_usd=cost,
                exit_reason=output.exit_reason.value,
            )
        trace = None if record is None else Deferred(partial(_validated, record))
        fields.update(task_outputs=outputs, cost_usd=cost, trace=trace)
        return output.model_copy(update=fields)

    def fail(self, error: BaseException) -> ExecutionTrace | None:
        """The trace of a failed run, everything up to the failure included."""
        with self._lock:
            record = self._finished(status="failed", error=error_record(error))
        return None if record is None else _validated(record)

    def _finished(self, **fields: Any) -> Record | None:
        """The trace's final record, once; later events change nothing. The recorder keeps no
        hold on it after this (closed), so it is the trace's alone until validated."""
        self._closed = True
        if self._trace is None:
            return None
        for task in self._tasks.values():
            if task.record is not None:  # a dict: TaskMetrics is built once, for the output
                task.record["metrics"] = task.metrics.fields()
        return {**self._trace, "ended_at": now(), **fields}


def _validated(record: Record) -> ExecutionTrace | None:
    """The recorded dicts as an ``ExecutionTrace``; None (logged) if they do not validate."""
    try:
        return ExecutionTrace.model_validate(with_datetimes(record))
    except ValidationError as error:  # observing a run must never break it
        _log.error("execution trace dropped: it did not validate", error=str(error)[:500])
        return None


_SHARED_FROM = 2048
"""Prompts shorter than this are stored whole: a reference saves little below it."""
_PROMPTS_KEPT = 4


_HANDLERS: dict[type, Any] = {  # None: ignored
    TaskStarted: TraceRecorder._task_started,
    TaskCompleted: TraceRecorder._task_completed,
    TaskFailed: TraceRecorder._task_failed,
    LLMCallStarted: TraceRecorder._llm_started,
    LLMCallCompleted: TraceRecorder._llm_completed,
    LLMCallFailed: TraceRecorder._llm_failed,
    ToolCallStarted: TraceRecorder._tool_started,
    ToolCallCompleted: TraceRecorder._tool_completed,
    DelegationStarted: TraceRecorder._delegation_started,
    DelegationCompleted: TraceRecorder._delegation_ended,
    DelegationFailed: TraceRecorder._delegation_ended,
    # known, and kept elsewhere (the run's own fields) or not at all (streamed text)
    EnsembleStarted: None,
    EnsembleCompleted: None,
    EnsembleFailed: None,
    TokenDelta: None,
    ReasoningDelta: None,
    StreamRestarted: None,
    PartialOutput: None,
    ReviewRequested: TraceRecorder._review_requested,
    ReviewDecided: TraceRecorder._review_decided,
    GuardrailChecked: TraceRecorder._guardrail_checked,
}

__all__ = ["TraceRecorder"]
