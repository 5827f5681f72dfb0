"""Running guardrails: call each one (sync in a worker thread, async awaited), report it as a
``GuardrailChecked`` event and a log line, and stop at the first failure."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from agentensemble.errors import GuardrailViolationError
from agentensemble.events import EventEmitter, GuardrailChecked
from agentensemble.execution.env import ExecutionEnv
from agentensemble.guardrails import GuardrailInput, GuardrailResult, guardrail_name
from agentensemble.logging import get_logger
from agentensemble.outputs import TaskOutput
from agentensemble.tools._sync import in_worker_thread

_log = get_logger()


async def _call(guardrail: Any, value: Any) -> GuardrailResult:
    name = guardrail_name(guardrail)
    call = getattr(guardrail, "__call__", guardrail)  # noqa: B004 - an async __call__ counts too
    if inspect.iscoroutinefunction(guardrail) or inspect.iscoroutinefunction(call):
        result = await guardrail(value)
    else:
        result = await in_worker_thread(guardrail, value)
        if inspect.isawaitable(result):
            result = await result
    if not isinstance(result, GuardrailResult):
        raise TypeError(
            f"guardrail {name!r} must return GuardrailResult.success() or "
            f"GuardrailResult.failure(message), got {type(result).__name__}"
        )
    return result


async def first_failure(
    guardrails: Sequence[Any],
    value: Any,
    *,
    kind: str,
    emitter: EventEmitter | None,
    task_description: str,
    agent_role: str,
    attempt: int = 1,
) -> tuple[str, str] | None:
    """Run ``guardrails`` in order on ``value``; (name, message) of the first failure, or None."""
    for guardrail in guardrails:
        name = guardrail_name(guardrail)
        result = await _call(guardrail, value)
        _log.info(
            "guardrail checked",
            kind=kind,
            guardrail=name,
            passed=result.passed,
            agent_role=agent_role,
            attempt=attempt,
        )
        if emitter:
            emitter.emit(
                GuardrailChecked(
                    kind=kind,
                    guardrail=name,
                    passed=result.passed,
                    task_description=task_description,
                    agent_role=agent_role,
                    message=result.message,
                    attempt=attempt,
                )
            )
        if not result.passed:
            return name, result.message or ""
    return None


async def check_input(
    guardrails: Sequence[Any], value: GuardrailInput, emitter: EventEmitter | None
) -> None:
    """Run the input guardrails; the first failure stops the task before any model call."""
    failed = await first_failure(
        guardrails,
        value,
        kind="input",
        emitter=emitter,
        task_description=value.description,
        agent_role=value.agent_role,
    )
    if failed is not None:
        name, message = failed
        raise GuardrailViolationError(
            f"Input guardrail {name!r} failed: {message}", guardrail=name, kind="input"
        )


def output_violation(name: str, message: str, attempts: int) -> GuardrailViolationError:
    """The error once an output guardrail keeps failing after the agent's corrections."""
    tries = "answer" if attempts == 1 else f"{attempts} answers"
    return GuardrailViolationError(
        f"Output guardrail {name!r} failed ({tries} checked): {message}",
        guardrail=name,
        kind="output",
        attempts=attempts,
    )


def guardrail_feedback(name: str, message: str) -> str:
    """What the agent is told when its answer failed an output guardrail."""
    return (
        f"Your answer did not pass the check {name!r}: {message}. "
        "Give your final answer again, corrected."
    )


async def check_handler_input(
    task: Any,
    description: str,
    expected_output: str,
    inputs: Mapping[str, Any],
    context: Sequence[TaskOutput],
    env: ExecutionEnv,
) -> None:
    """A deterministic task's input guardrails, before its handler runs."""
    if task.input_guardrails:
        seen = GuardrailInput(
            description=description,
            expected_output=expected_output,
            agent_role="handler",
            inputs=dict(inputs),
            context=tuple(output.raw for output in context),
        )
        await check_input(task.input_guardrails, seen, env.emitter)


async def check_handler_output(task: Any, output: TaskOutput, env: ExecutionEnv) -> None:
    """A deterministic task's output guardrails: no agent to correct it, so a failure raises."""
    failed = await first_failure(
        task.output_guardrails,
        output,
        kind="output",
        emitter=env.emitter,
        task_description=output.task_description,
        agent_role=output.agent_role,
    )
    if failed is not None:
        raise output_violation(*failed, attempts=1)


__all__ = [
    "check_handler_input",
    "check_handler_output",
    "check_input",
    "first_failure",
    "guardrail_feedback",
    "output_violation",
]
