"""The sequential workflow: tasks in list order, declared context threaded, review gates applied."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from agentensemble._interrupts import ends_the_run
from agentensemble.errors import ExitEarlyError, OutputParsingError, TaskExecutionError
from agentensemble.events import TaskCompleted, TaskFailed, TaskStarted
from agentensemble.execution.agent_executor import AgentExecutor, ExecutionEnv
from agentensemble.execution.guardrails import check_handler_input, check_handler_output
from agentensemble.execution.prompts import ContextItem
from agentensemble.execution.structured import parse_output
from agentensemble.logging import get_logger
from agentensemble.outputs import EnsembleOutput, ExitReason, TaskOutput
from agentensemble.task import TaskHandlerContext
from agentensemble.tools._sync import in_worker_thread
from agentensemble.workflows._review_gates import (
    ask_reviewer,
    is_enabled,
)
from agentensemble.workflows.base import PreparedTask  # re-exported: it used to live here

_log = get_logger()


@dataclass
class RunState:
    """What a run has produced so far; survives a failure so nothing is lost."""

    outputs: list[TaskOutput] = field(default_factory=list)
    by_task: dict[int, TaskOutput] = field(default_factory=dict)
    # each output as prompt context, built once: later tasks share it (no per-pair rebuilding)
    context_items: dict[int, ContextItem] = field(default_factory=dict)
    exit_reason: ExitReason = ExitReason.COMPLETED


async def run_sequential(
    prepared: Sequence[PreparedTask], env: ExecutionEnv, inputs: Mapping[str, Any]
) -> EnsembleOutput:
    """Run every task in order; raise TaskExecutionError holding all completed outputs."""
    started = time.perf_counter()
    state = RunState()
    total = len(prepared)
    for index, item in enumerate(prepared, start=1):
        try:
            if not await _run_one(item, index, total, env, inputs, state):
                break
        except ExitEarlyError as stop:
            state.exit_reason = ExitReason.TIMEOUT if stop.timed_out else ExitReason.USER_EXIT_EARLY
            _log.info("run exited early", task_index=index, reason=stop.reason)
            break
        except BaseException as error:  # a nested run's TaskExecutionError is this task's too
            if ends_the_run(error):
                raise
            env.emitter.emit(TaskFailed(index, total, item.description, error))
            _log.error(
                "task failed", task_index=index, agent_role=item.agent_role, error=str(error)
            )
            raise TaskExecutionError(
                f"Task {index} ({item.task.label!r}) failed: {type(error).__name__}: {error}",
                task=item.task,
                completed_outputs=state.outputs,
            ) from error
    return EnsembleOutput.from_tasks(
        state.outputs,
        exit_reason=state.exit_reason,
        total_duration=timedelta(seconds=time.perf_counter() - started),
        tasks=[item.task for item in prepared if id(item.task) in state.by_task],
    )


async def _run_one(
    item: PreparedTask,
    index: int,
    total: int,
    env: ExecutionEnv,
    inputs: Mapping[str, Any],
    state: RunState,
) -> bool:
    """Run one task with its gates; False when the run must stop after it."""
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
        _log.info("review decided", timing="before_execution", task_index=index, stop=verdict.stop)
        if verdict.stop:
            raise ExitEarlyError(verdict.reason, timed_out=verdict.timed_out)
        if verdict.revised_text is not None:
            description = verdict.revised_text

    env.emitter.emit(TaskStarted(index, total, description, item.agent_role))
    _log.info("task started", task_index=index, total_tasks=total, agent_role=item.agent_role)
    started = time.perf_counter()
    if item.agent_task is None:
        by_task = state.by_task
        context = [by_task[key] for t in item.task.context if (key := id(t)) in by_task]
        output = await _run_handler(item, description, inputs, context, env)
    else:
        items = state.context_items
        agent_task = replace(
            item.agent_task,
            description=description,
            context=[items[key] for t in item.task.context if (key := id(t)) in items],
        )
        output = await AgentExecutor(agent_task, env).run()
    output = output.model_copy(
        update={"duration": timedelta(seconds=time.perf_counter() - started)}
    )
    _log.info(
        "task finished",
        task_index=index,
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
        _log.info("review decided", timing="after_execution", task_index=index, stop=verdict.stop)
        if verdict.revised_text is not None:
            output = _edited(output, verdict.revised_text, item.task.output_type)
        if verdict.stop:
            stop = ExitReason.TIMEOUT if verdict.timed_out else ExitReason.USER_EXIT_EARLY

    if item.memory is not None:  # the final output, after any reviewer's edit
        try:
            await item.memory.remember(description, output.raw)
        except Exception as error:  # the output is kept; only its memory is lost
            _log.error("memory write failed", task_index=index, error=str(error))
    state.outputs.append(output)
    state.by_task[id(item.task)] = output
    state.context_items[id(item.task)] = ContextItem(
        output.task_description, output.agent_role, output.raw
    )
    env.emitter.emit(TaskCompleted(index, total, output))
    if stop is not None:
        state.exit_reason = stop
        return False
    return True


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
    inputs: Mapping[str, Any],
    context: list[TaskOutput],
    env: ExecutionEnv,
) -> TaskOutput:
    """A deterministic task: call the user's handler, no model involved."""
    handler = item.task.handler
    assert handler is not None
    await check_handler_input(item.task, description, item.expected_output, inputs, context, env)
    ctx = TaskHandlerContext(
        description=description,
        expected_output=item.expected_output,
        inputs=dict(inputs),
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


__all__ = ["PreparedTask", "run_sequential"]
