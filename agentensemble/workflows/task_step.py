"""A Task as a step: one run of one task with its review gates, context and feedback.

The same code runs a top-level task, a loop's body task each iteration, a graph's state each
time it is visited, and each item of a ``for_each`` fan-out: so review gates, tool approvals,
typed output, guardrails, events and the trace work alike everywhere.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from agentensemble._base.dataclass import dataclass
from agentensemble._base.interrupts import ends_the_run
from agentensemble.errors import ExitEarlyError, OutputParsingError
from agentensemble.events import TaskCompleted, TaskFailed, TaskStarted
from agentensemble.execution.agent_executor import AgentExecutor
from agentensemble.execution.guardrails import check_handler_input, check_handler_output
from agentensemble.execution.structured import parse_output
from agentensemble.logging import get_logger
from agentensemble.outputs import ExitReason, TaskOutput
from agentensemble.task import TaskHandlerContext
from agentensemble.tools._sync import in_worker_thread
from agentensemble.workflows._review_gates import ask_reviewer, is_enabled
from agentensemble.workflows.base import PreparedTask
from agentensemble.workflows.step import Feedback, StepCall, StepResult

PREVIOUS_ANSWER = "Your previous answer to this task (revise it)"
FEEDBACK_ON_IT = "Feedback on your previous answer: address every point in your revised answer"
_log = get_logger()


@dataclass
class TaskStep:
    """One prepared task: one slot."""

    item: PreparedTask
    capacity: int = 1

    @property
    def source(self) -> Any:
        return self.item.task

    async def run(self, call: StepCall) -> StepResult:
        slot = call.base + 1
        output, stop = await run_task(self.item, slot, call)
        return StepResult([output], stop, [slot])


def feedback_outputs(feedback: Feedback | None) -> list[TaskOutput]:
    """The feedback as outputs, titled so the model reads them as revision instructions."""
    if feedback is None:
        return []
    shown: list[TaskOutput] = []
    if feedback.previous is not None:
        shown.append(feedback.previous.model_copy(update={"task_description": PREVIOUS_ANSWER}))
    shown.append(feedback.cause.model_copy(update={"task_description": FEEDBACK_ON_IT}))
    return shown


async def run_task(item: PreparedTask, slot: int, call: StepCall) -> tuple[TaskOutput, bool]:
    """Run one task at ``slot``; its output (recorded in the run state) and whether the run
    must stop after it. A failure emits ``TaskFailed`` and goes up unchanged."""
    try:
        return await _run(item, slot, call)
    except ExitEarlyError:
        raise
    except BaseException as error:
        if ends_the_run(error):
            raise
        state = call.state
        call.env.emitter.emit(TaskFailed(slot, state.total, item.description, error))
        _log.error("task failed", task_index=slot, agent_role=item.agent_role, error=str(error))
        if state.failed is None:
            state.failed = (slot, item.task)
        raise


async def _run(item: PreparedTask, slot: int, call: StepCall) -> tuple[TaskOutput, bool]:
    env, state = call.env, call.state
    description = item.description
    if is_enabled(item.before_review):
        verdict = await ask_reviewer(
            env.review_handler,
            item.before_review,
            timing="before_execution",
            task_description=description,
            output=description,
            emitter=env.emitter,
        )
        _log.info("review decided", timing="before_execution", task_index=slot, stop=verdict.stop)
        if verdict.stop:
            raise ExitEarlyError(verdict.reason, timed_out=verdict.timed_out)
        if verdict.revised_text is not None:
            description = verdict.revised_text

    env.emitter.emit(
        TaskStarted(slot, state.total, description, item.agent_role, within=call.within)
    )
    _log.info("task started", task_index=slot, total_tasks=state.total, agent_role=item.agent_role)
    started = time.perf_counter()
    handed = [*call.context, *feedback_outputs(call.feedback)]
    if item.agent_task is None:
        context = [*call.scope.lookup_all(item.task.context), *handed]
        output = await _run_handler(item, description, call.inputs, context, call)
        output = output.model_copy(
            update={"duration": timedelta(seconds=time.perf_counter() - started)}
        )
    else:  # the executor counts the duration from the same start: no copy of its output
        items = call.scope.gather(item.task.context, state.context_items_of)
        if handed:
            items = items.extended(state.context_items_of(handed))
        agent_task = item.agent_task.for_run(description, items)
        output = await AgentExecutor(agent_task, env, started=started).run()
    if _log.isEnabledFor(logging.INFO):  # its fields are built only if the line is shown
        _log.info(
            "task finished",
            task_index=slot,
            agent_role=item.agent_role,
            duration_s=round(output.duration.total_seconds(), 3),
            llm_calls=output.llm_calls,
            tool_calls=len(output.tool_calls),
        )

    stop = None
    if is_enabled(item.after_review):
        verdict = await ask_reviewer(
            env.review_handler,
            item.after_review,
            timing="after_execution",
            task_description=description,
            output=output.raw,
            emitter=env.emitter,
        )
        _log.info("review decided", timing="after_execution", task_index=slot, stop=verdict.stop)
        if verdict.revised_text is not None:
            output = _edited(output, verdict.revised_text, item.task.output_type)
        if verdict.stop:
            stop = ExitReason.TIMEOUT if verdict.timed_out else ExitReason.USER_EXIT_EARLY

    if item.memory is not None:  # the final output, after any reviewer's edit
        try:
            await item.memory.remember(description, output.raw)
        except Exception as error:  # the output is kept; only its memory is lost
            _log.error("memory write failed", task_index=slot, error=str(error))
    state.record(slot, item.task, output)
    env.emitter.emit(TaskCompleted(slot, state.total, output))
    if stop is not None:
        state.exit_reason = stop
        return output, True
    return output, False


def _edited(output: TaskOutput, text: str, output_type: Any) -> TaskOutput:
    parsed = None
    if output_type is not None:
        try:
            parsed = parse_output(text, output_type)
        except OutputParsingError as error:
            _log.warning("edited output does not parse into output_type", error=str(error))
    return output.model_copy(update={"raw": text, "parsed": parsed})


async def _run_handler(
    item: PreparedTask,
    description: str,
    inputs: Any,
    context: list[TaskOutput],
    call: StepCall,
) -> TaskOutput:
    """A deterministic task: call the user's handler, no model involved."""
    handler = item.task.handler
    assert handler is not None
    values = item.inputs if item.inputs is not None else inputs
    env = call.env
    await check_handler_input(item.task, description, item.expected_output, values, context, env)
    ctx = TaskHandlerContext(
        description=description,
        expected_output=item.expected_output,
        inputs=dict(values),
        context_outputs=list(context),
    )
    result = await _call_maybe_async(handler, ctx)
    parsed: Any = None
    if result is None:
        raw = ""
    elif isinstance(result, BaseModel):
        raw, parsed = result.model_dump_json(), result
    elif isinstance(result, str):
        raw = result
        if item.task.output_type is not None:
            parsed = parse_output(raw, item.task.output_type)
    else:
        raise TypeError(
            f"a task handler must return a str, a pydantic model or None; "
            f"got {type(result).__name__}"
        )
    output = TaskOutput(
        raw=raw,
        parsed=parsed,
        task_description=description,
        agent_role=item.agent_role,
        task_name=item.task.name,
    )
    await check_handler_output(item.task, output, env)
    return output


async def _call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    result = await in_worker_thread(fn, *args)
    if inspect.isawaitable(result):
        return await result
    return result


__all__ = ["FEEDBACK_ON_IT", "PREVIOUS_ANSWER", "TaskStep", "feedback_outputs", "run_task"]
