"""OpenTelemetry spans for runs, tasks, model calls and tool calls (``agentensemble-py[otel]``).

``OpenTelemetryListener()`` goes into ``Ensemble(listeners=[...])``. It turns the run's events
into spans named and attributed per the OpenTelemetry GenAI semantic conventions:

- ``invoke_workflow agentensemble`` for a run (child of the span current when the run began),
- ``invoke_agent <role>`` for each task,
- ``chat <model>`` for each model call (``gen_ai.request.model``, ``gen_ai.usage.*``),
- ``execute_tool <name>`` for each tool call (``gen_ai.tool.name``, ``gen_ai.tool.call.id``),
- ``invoke_agent <worker>`` for each delegation, with the worker's own calls nested inside.

With ``include_content=True`` the spans also carry what was said: prompts and answers, tool
arguments and results, in the GenAI conventions' attributes (``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.tool.call.arguments`` / ``.result``) and OpenInference's
(``openinference.span.kind``, ``input.value``, ``output.value``, ``llm.input_messages.*``),
each text through the redaction policy and cut to ``max_content_chars``
(``agentensemble.tracing._content``). Off by default: spans then carry no content at all.

Parents come from the ids events carry (run id, task index, call id), not from the thread that
delivers them, so concurrent runs and tasks and tools in worker threads nest correctly. Failures
set the span status to ERROR, with the exception recorded. Only this module imports
OpenTelemetry; the core never imports it.
"""

from __future__ import annotations

import threading
import time
import traceback
from typing import Any

from agentensemble.events import (
    DelegationCompleted,
    DelegationFailed,
    DelegationStarted,
    EnsembleCompleted,
    EnsembleEvent,
    EnsembleFailed,
    EnsembleStarted,
    GraphStepCompleted,
    LLMCallCompleted,
    LLMCallFailed,
    LLMCallStarted,
    LoopIterationCompleted,
    TaskCompleted,
    TaskFailed,
    TaskStarted,
    ToolCallCompleted,
    ToolCallStarted,
)
from agentensemble.redaction import redact, redact_text
from agentensemble.tracing import _content

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'agentensemble.otel needs OpenTelemetry: pip install "agentensemble-py[otel]"'
    ) from error

SYSTEM = "agentensemble"
_INSTRUMENTATION = "agentensemble"


def _qualified(kind: type) -> str:
    """An exception type's name as OpenTelemetry writes it (module-qualified unless built in)."""
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def _provider_of(model: str) -> str | None:
    return model.split("/", 1)[0] if "/" in model else None


class OpenTelemetryListener:
    """Emits OpenTelemetry spans for a run's events; uses the global tracer provider unless
    ``tracer_provider`` is given. ``include_content=True`` puts prompts, answers, tool arguments
    and results on the spans (redacted, each text cut to ``max_content_chars``)."""

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        include_content: bool = False,
        max_content_chars: int = _content.DEFAULT_LIMIT,
    ) -> None:
        if not isinstance(include_content, bool):
            raise TypeError(
                f"include_content must be True or False; got {type(include_content).__name__}"
            )
        if (
            isinstance(max_content_chars, bool)
            or not isinstance(max_content_chars, int)
            or max_content_chars < 1
        ):
            raise ValueError(
                f"max_content_chars must be a positive number of characters; "
                f"got {max_content_chars!r}"
            )
        self._content = include_content
        self._limit = max_content_chars
        self._converted: dict[tuple[str, int | None], _content.MessageCache] = {}
        self._tracer = trace.get_tracer(_INSTRUMENTATION, tracer_provider=tracer_provider)
        self._lock = threading.Lock()
        self._runs: dict[str, Span] = {}
        self._tasks: dict[tuple[str, int], Span] = {}
        self._calls: dict[tuple[str, str], Span] = {}
        self._tools: dict[tuple[str, str], tuple[Span, int]] = {}
        self._delegations: dict[tuple[str, int | None, str], list[Span]] = {}

    # -- span bookkeeping ---------------------------------------------------------------------

    def _start(
        self, name: str, parent: Span | None, attributes: dict[str, Any], kind: Any = None
    ) -> Span:
        context = trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(
            name,
            context=context if context is not None else otel_context.get_current(),
            kind=kind if kind is not None else SpanKind.INTERNAL,
            attributes={k: redact(v) for k, v in attributes.items() if v is not None},
        )

    def _parent(
        self, run_id: str, task_index: int | None, agent_role: str | None = None
    ) -> Span | None:
        delegated = self._delegations.get((run_id, task_index, agent_role or ""))
        if delegated:  # a worker's own calls nest under its delegation
            return delegated[-1]
        if task_index is not None and (run_id, task_index) in self._tasks:
            return self._tasks[(run_id, task_index)]
        return self._runs.get(run_id)

    @staticmethod
    def _fail(span: Span, error: BaseException) -> None:
        span.set_attribute("error.type", type(error).__name__)
        # the exception event as the SDK's record_exception writes it, but its message and
        # traceback pass the redaction policy: an exporter sends them out of the process
        stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        span.add_event(
            "exception",
            {
                "exception.type": _qualified(type(error)),
                "exception.message": redact_text(str(error)),
                "exception.stacktrace": redact_text(stack),
                "exception.escaped": "False",
            },
        )
        span.set_status(Status(StatusCode.ERROR, redact_text(str(error))[:500]))

    # -- events -------------------------------------------------------------------------------

    def on_event(self, event: EnsembleEvent) -> None:
        with self._lock:
            self._handle(event)

    def _handle(self, event: EnsembleEvent) -> None:
        if isinstance(event, EnsembleStarted):
            parent = self._runs.get(event.parent_run_id or "")
            self._runs[event.run_id] = self._start(
                f"invoke_workflow {SYSTEM}",
                parent,
                {
                    "gen_ai.operation.name": "invoke_workflow",
                    "gen_ai.workflow.name": SYSTEM,
                    "agentensemble.run_id": event.run_id,
                    "agentensemble.parent_run_id": event.parent_run_id,
                    "agentensemble.total_tasks": event.total_tasks,
                },
            )
            if self._content:
                self._runs[event.run_id].set_attributes(_content.started("CHAIN", None, 0))
        elif isinstance(event, EnsembleCompleted):
            self._forget(event.run_id)
            span = self._runs.pop(event.run_id, None)
            if span is not None:
                self._set_usage(span, event.output.usage)
                if event.output.cost_usd is not None:
                    span.set_attribute("agentensemble.cost_usd", event.output.cost_usd)
                span.set_attribute("agentensemble.exit_reason", event.output.exit_reason.value)
                if self._content:
                    span.set_attributes(_content.ended(event.output.raw, self._limit))
                span.end()
        elif isinstance(event, TaskStarted):
            span = self._tasks[(event.run_id, event.task_index)] = self._start(
                f"invoke_agent {event.agent_role}",
                self._runs.get(event.run_id),
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": event.agent_role,
                    "agentensemble.run_id": event.run_id,
                    "agentensemble.task_index": event.task_index,
                },
            )
            if self._content:
                span.set_attributes(_content.started("AGENT", event.task_description, self._limit))
        elif isinstance(event, TaskCompleted):
            self._converted.pop((event.run_id, event.task_index), None)
            span = self._tasks.pop((event.run_id, event.task_index), None)
            if span is not None:
                self._set_usage(span, event.output.usage)
                if self._content:
                    span.set_attributes(_content.ended(event.output.raw, self._limit))
                span.end()
        elif isinstance(event, TaskFailed):
            self._converted.pop((event.run_id, event.task_index), None)
            span = self._tasks.pop((event.run_id, event.task_index), None)
            if span is not None:
                self._fail(span, event.error)
                span.end()
        elif isinstance(event, (LoopIterationCompleted, GraphStepCompleted)):
            run = self._runs.get(event.run_id)
            if run is not None:  # a point on the run's span: each iteration / graph step
                name = (
                    "loop_iteration" if isinstance(event, LoopIterationCompleted) else "graph_step"
                )
                fields = {
                    f"agentensemble.{key}": value
                    for key, value in event.trace_fields().items()
                    if value is not None
                }
                run.add_event(f"agentensemble.{name}", fields)
        elif isinstance(event, EnsembleFailed):
            self._forget(event.run_id)
            run = self._runs.pop(event.run_id, None)
            if run is not None:
                self._fail(run, event.error)
                run.end()
        elif isinstance(event, LLMCallStarted):
            span = self._calls[(event.run_id, event.call_id)] = self._start(
                f"chat {event.model}",
                self._parent(event.run_id, event.task_index, event.agent_role),
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": event.model,
                    "gen_ai.provider.name": _provider_of(event.model),
                    "gen_ai.agent.name": event.agent_role,
                    "agentensemble.run_id": event.run_id,
                },
                SpanKind.CLIENT,
            )
            if self._content:
                task = (event.run_id, event.task_index)
                cache = self._converted.get(task)
                if cache is None:
                    cache = self._converted[task] = _content.MessageCache(self._limit)
                span.set_attributes(
                    _content.model_call_started(
                        event.model, _provider_of(event.model), event.messages, cache
                    )
                )
        elif isinstance(event, LLMCallCompleted):
            span = self._calls.pop((event.run_id, event.call_id), None)
            if span is not None:
                self._set_usage(span, event.usage)
                response = event.response
                if response is not None:
                    if isinstance(response.finish_reason, str):  # provider data: checked
                        span.set_attribute(
                            "gen_ai.response.finish_reasons", [response.finish_reason]
                        )
                    if isinstance(response.model, str):
                        span.set_attribute("gen_ai.response.model", response.model)
                span.set_attribute("agentensemble.attempts", event.attempts)
                if event.cost_usd is not None:
                    span.set_attribute("agentensemble.cost_usd", event.cost_usd)
                if self._content:
                    span.set_attributes(
                        _content.model_call_completed(response, event.usage, self._limit)
                    )
                span.end()
        elif isinstance(event, LLMCallFailed):
            span = self._calls.pop((event.run_id, event.call_id), None)
            if span is not None:
                self._fail(span, event.error)
                span.end()
        elif isinstance(event, ToolCallStarted):
            span = self._start(
                f"execute_tool {event.name}",
                self._parent(event.run_id, event.task_index, event.agent_role),
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event.name,
                    "gen_ai.tool.call.id": event.call_id,
                    "gen_ai.tool.type": "function",
                    "agentensemble.run_id": event.run_id,
                },
            )
            if self._content:
                span.set_attributes(
                    _content.tool_call_started(event.name, event.arguments, self._limit)
                )
            self._tools[(event.run_id, event.call_id)] = (span, time.time_ns())
        elif isinstance(event, ToolCallCompleted):
            self._tool_completed(event)
        elif isinstance(event, DelegationStarted):
            span = self._start(
                f"invoke_agent {event.to_role}",
                self._parent(event.run_id, event.task_index, event.from_role),
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": event.to_role,
                    "agentensemble.delegated_by": event.from_role,
                    "agentensemble.delegation_depth": event.depth,
                    "agentensemble.run_id": event.run_id,
                },
            )
            if self._content:
                span.set_attributes(_content.started("AGENT", event.instructions, self._limit))
            key = (event.run_id, event.task_index, event.to_role)
            self._delegations.setdefault(key, []).append(span)
        elif isinstance(event, (DelegationCompleted, DelegationFailed)):
            self._delegation_ended(event)

    def _forget(self, run_id: str) -> None:
        """The run ended: its tasks' converted messages go (model calls outside a task too)."""
        if self._converted:
            for key in [key for key in self._converted if key[0] == run_id]:
                del self._converted[key]

    def _delegation_ended(self, event: DelegationCompleted | DelegationFailed) -> None:
        stack = self._delegations.get((event.run_id, event.task_index, event.to_role))
        if not stack:
            return  # refused before it started: no span was opened
        span = stack.pop()
        if isinstance(event, DelegationCompleted):
            self._set_usage(span, event.output.usage)
            if self._content:
                span.set_attributes(_content.ended(event.output.raw, self._limit))
        else:
            span.set_attribute("error.type", "DelegationFailed")
            span.set_status(Status(StatusCode.ERROR, redact_text(event.error)[:500]))
        span.end()

    def _tool_completed(self, event: ToolCallCompleted) -> None:
        entry = self._tools.pop((event.run_id, event.call_id or ""), None)
        if entry is None:
            return
        span, started = entry
        record = event.record
        if self._content:
            span.set_attributes(_content.tool_call_completed(record.output, self._limit))
        if not record.is_success:
            span.set_attribute("error.type", "ToolError")
            span.set_status(Status(StatusCode.ERROR, redact_text(record.output)[:500]))
        # results are delivered after the whole turn: end at the call's own measured duration
        span.end(end_time=started + int(record.duration.total_seconds() * 1e9))

    @staticmethod
    def _set_usage(span: Span, usage: Any) -> None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)


__all__ = ["OpenTelemetryListener"]
