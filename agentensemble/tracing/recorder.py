"""``TraceRecorder``: a listener that builds a run's ``ExecutionTrace`` and metrics from events.

It never reaches into the workflow or the executor: whatever a workflow emits lands in the
trace. Events are attributed to tasks by the ``task_index`` they carry (read from the context
they were built in); reviews before a task belong to the next task that starts. Everything
text-like is redacted before it is stored. With ``capture="off"`` only the per-task metrics are
kept (cheap counters); ``"standard"`` keeps everything but the full message list of each model
turn; ``"full"`` keeps those too.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from agentensemble.events import (
    EnsembleEvent,
    LLMCallCompleted,
    LLMCallFailed,
    LLMCallStarted,
    ReviewDecided,
    ReviewRequested,
    TaskCompleted,
    TaskFailed,
    TaskStarted,
    ToolCallCompleted,
    ToolCallStarted,
)
from agentensemble.llm.cost import add_costs
from agentensemble.logging import redact, redact_text
from agentensemble.outputs import EnsembleOutput, TokenUsage
from agentensemble.tracing.trace import (
    Capture,
    ErrorInfo,
    ExecutionTrace,
    ModelTurn,
    RequestedToolCall,
    ReviewTrace,
    TaskMetrics,
    TaskTrace,
    TokenCounts,
    ToolCallTrace,
)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _text(value: Any) -> str | None:
    return None if value is None else redact_text(str(value))


def json_safe(value: Any) -> Any:
    """``value`` redacted and reduced to JSON data (unknown objects become their repr)."""
    return json.loads(json.dumps(redact(value), default=repr))


def error_info(error: BaseException) -> ErrorInfo:
    return ErrorInfo(type=type(error).__name__, message=redact_text(str(error)))


def _counts(usage: TokenUsage) -> TokenCounts:
    return TokenCounts(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
    )


@dataclass
class _OpenReview:
    task_index: int | None
    key: tuple[str, str | None, str]
    started: float
    trace: ReviewTrace | None


@dataclass
class _Task:
    """A task's counters (always) and its trace (unless capture is off)."""

    metrics: TaskMetrics = field(default_factory=TaskMetrics)
    trace: TaskTrace | None = None
    costs: list[float | None] = field(default_factory=list)


class TraceRecorder:
    """Listens to one run's events; ``complete``/``fail`` hand back the trace and metrics."""

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
        self._tasks: dict[int, _Task] = {}
        self._order: list[int] = []
        self._turns: dict[str, ModelTurn] = {}
        self._tools: dict[str, ToolCallTrace] = {}
        self._open_reviews: list[_OpenReview] = []
        self._waiting_reviews: list[_OpenReview] = []  # asked before their task started
        self._early_wait = 0.0
        self._by_output: dict[int, int] = {}
        self.trace: ExecutionTrace | None = None
        if capture != "off":
            self.trace = ExecutionTrace(
                run_id=run_id,
                parent_run_id=parent_run_id,
                capture=capture,
                started_at=_now(),
                workflow=workflow,
                inputs=json_safe(dict(inputs or {})),
            )

    # -- events -------------------------------------------------------------------------------

    def on_event(self, event: EnsembleEvent) -> None:
        if getattr(event, "run_id", self.run_id) != self.run_id:
            return  # a nested run's events are its own recorder's business
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            with self._lock:
                handler(self, event)

    def _task_started(self, event: TaskStarted) -> None:
        task = _Task()
        if self.trace is not None:
            task.trace = TaskTrace(
                index=event.task_index,
                description=redact_text(event.task_description),
                agent_role=event.agent_role,
                started_at=_now(),
            )
            self.trace.tasks.append(task.trace)
        self._tasks[event.task_index] = task
        self._order.append(event.task_index)
        task.metrics.review_wait_seconds += self._early_wait
        self._early_wait = 0.0
        for review in self._waiting_reviews:
            review.task_index = event.task_index
            if review.trace is not None and task.trace is not None:
                task.trace.reviews.append(review.trace)
        self._waiting_reviews = []

    def _task_for(self, index: int | None, agent_role: str | None = None) -> _Task | None:
        if index is not None and index in self._tasks:
            return self._tasks[index]
        running = [self._tasks[i] for i in reversed(self._order)]
        for task in running:  # no index: the latest task of that agent
            if task.trace is not None and task.trace.agent_role == agent_role:
                return task
        return running[0] if running else None

    def _task_completed(self, event: TaskCompleted) -> None:
        task = self._task_for(event.task_index)
        if task is None:
            return
        self._by_output[id(event.output)] = event.task_index
        if task.trace is not None:
            output = event.output
            task.trace.status = "completed"
            task.trace.ended_at = _now()
            task.trace.output = redact_text(output.raw)
            task.trace.usage = _counts(output.usage)
            task.trace.cost_usd = output.cost_usd
            task.trace.task_name = output.task_name
            task.trace.description = redact_text(output.task_description)

    def _task_failed(self, event: TaskFailed) -> None:
        task = self._task_for(event.task_index)
        if task is not None and task.trace is not None:
            task.trace.status = "failed"
            task.trace.ended_at = _now()
            task.trace.error = error_info(event.error)

    def _llm_started(self, event: LLMCallStarted) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None or task.trace is None:
            return
        trace = task.trace
        messages = list(event.messages)
        if trace.system_prompt is None and len(messages) >= 2:
            trace.system_prompt = _text(messages[0].get("content"))
            trace.user_prompt = _text(messages[1].get("content"))
            trace.model = event.model
            trace.task_name = event.task_name
        turn = ModelTurn(
            call_id=event.call_id,
            model=event.model,
            agent_role=event.agent_role,
            started_at=_now(),
            message_count=len(messages),
            messages=json_safe(messages) if self.capture == "full" else None,
        )
        trace.model_turns.append(turn)
        self._turns[event.call_id] = turn

    def _llm_completed(self, event: LLMCallCompleted) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None:
            return
        task.metrics.model_seconds += event.duration.total_seconds()
        task.metrics.retries += max(0, event.attempts - 1)
        task.costs.append(event.cost_usd)
        turn = self._turns.pop(event.call_id, None)
        if turn is None:
            return
        turn.latency_seconds = event.duration.total_seconds()
        turn.attempts = event.attempts
        turn.usage = _counts(event.usage)
        turn.cost_usd = event.cost_usd
        response = event.response
        if response is not None:
            turn.content = _text(response.content)
            turn.finish_reason = response.finish_reason
            turn.tool_calls = [
                RequestedToolCall(id=c.id, name=c.name, arguments=redact_text(c.arguments))
                for c in response.tool_calls
            ]

    def _llm_failed(self, event: LLMCallFailed) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None:
            return
        task.metrics.model_seconds += event.duration.total_seconds()
        attempts = getattr(event.error, "attempts", 1)
        task.metrics.retries += max(0, attempts - 1 if isinstance(attempts, int) else 0)
        turn = self._turns.pop(event.call_id, None)
        if turn is not None:
            turn.latency_seconds = event.duration.total_seconds()
            turn.attempts = attempts if isinstance(attempts, int) else 1
            turn.error = error_info(event.error)

    def _tool_started(self, event: ToolCallStarted) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None or task.trace is None:
            return
        call = ToolCallTrace(
            call_id=event.call_id,
            name=event.name,
            arguments=redact_text(event.arguments),
            started_at=_now(),
        )
        task.trace.tool_calls.append(call)
        self._tools[event.call_id] = call

    def _tool_completed(self, event: ToolCallCompleted) -> None:
        task = self._task_for(event.task_index, event.agent_role)
        if task is None:
            return
        record = event.record
        task.metrics.tool_seconds += record.duration.total_seconds()
        if task.trace is None:
            return
        call = self._tools.pop(event.call_id or "", None)
        if call is None:  # never started (over the tool-call limit): recorded as refused
            call = ToolCallTrace(call_id=event.call_id, name=record.name, arguments="")
            task.trace.tool_calls.append(call)
        call.arguments = redact_text(record.arguments)
        call.output = redact_text(record.output)
        call.is_success = record.is_success
        call.duration_seconds = record.duration.total_seconds()
        call.return_behavior = record.return_behavior.value

    def _review_requested(self, event: ReviewRequested) -> None:
        trace = None
        if self.trace is not None:
            trace = ReviewTrace(
                timing=event.timing,
                tool_name=event.tool_name,
                requested_at=_now(),
                prompt=_text(event.prompt),
                output=_text(event.output),
            )
        key = (event.timing, event.tool_name, event.task_description)
        before = event.timing == "before_execution"
        review = _OpenReview(None if before else event.task_index, key, time.perf_counter(), trace)
        self._open_reviews.append(review)
        if before:
            self._waiting_reviews.append(review)
            return
        task = self._task_for(event.task_index)
        if task is not None and task.trace is not None and trace is not None:
            task.trace.reviews.append(trace)

    def _review_decided(self, event: ReviewDecided) -> None:
        key = (event.timing, event.tool_name, event.task_description)
        review = next((r for r in self._open_reviews if r.key == key), None)
        if review is None:
            return
        self._open_reviews.remove(review)
        wait = time.perf_counter() - review.started
        task = self._tasks.get(review.task_index) if review.task_index is not None else None
        if task is not None:
            task.metrics.review_wait_seconds += wait
        else:
            self._early_wait += wait
        if review.trace is not None:
            review.trace.decision = event.decision
            review.trace.decided_by = event.decided_by
            review.trace.details = json_safe(event.details)
            review.trace.wait_seconds = wait

    # -- results ------------------------------------------------------------------------------

    def metrics_for(self, index: int) -> TaskMetrics:
        task = self._tasks.get(index)
        return task.metrics.model_copy() if task is not None else TaskMetrics()

    def complete(self, output: EnsembleOutput) -> EnsembleOutput:
        """``output`` with per-task metrics, the total cost and (unless off) the trace."""
        with self._lock:
            outputs = [
                o.model_copy(update={"metrics": self.metrics_for(self._by_output[id(o)])})
                if id(o) in self._by_output
                else o
                for o in output.task_outputs
            ]
            priced = [o.cost_usd for o in outputs if o.llm_calls]
            cost = add_costs(priced) if priced else None
            trace = self._finished("completed", usage=output.usage, cost=cost)
            if trace is not None:
                trace.exit_reason = output.exit_reason.value
        return output.model_copy(update={"task_outputs": outputs, "cost_usd": cost, "trace": trace})

    def fail(self, error: BaseException) -> ExecutionTrace | None:
        """The trace of a failed run, everything up to the failure included."""
        with self._lock:
            trace = self._finished("failed")
            if trace is not None:
                trace.error = error_info(error)
        return trace

    def _finished(
        self, status: str, *, usage: TokenUsage | None = None, cost: float | None = None
    ) -> ExecutionTrace | None:
        if self.trace is None:
            return None
        for index, task in self._tasks.items():
            if task.trace is not None:
                task.trace.metrics = self.metrics_for(index)
        trace = self.trace.model_copy(deep=True)
        trace.status = "completed" if status == "completed" else "failed"
        trace.ended_at = _now()
        if usage is not None:
            trace.usage = _counts(usage)
        trace.cost_usd = cost
        return trace


_HANDLERS: dict[type, Any] = {
    TaskStarted: TraceRecorder._task_started,
    TaskCompleted: TraceRecorder._task_completed,
    TaskFailed: TraceRecorder._task_failed,
    LLMCallStarted: TraceRecorder._llm_started,
    LLMCallCompleted: TraceRecorder._llm_completed,
    LLMCallFailed: TraceRecorder._llm_failed,
    ToolCallStarted: TraceRecorder._tool_started,
    ToolCallCompleted: TraceRecorder._tool_completed,
    ReviewRequested: TraceRecorder._review_requested,
    ReviewDecided: TraceRecorder._review_decided,
}

__all__ = ["TraceRecorder", "error_info", "json_safe"]
