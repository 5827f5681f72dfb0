"""Guardrails on a task's input and output: callables (sync or async) returning a
GuardrailResult; an input failure stops the task before any model call, an output failure goes
back to the agent until the bound, then GuardrailViolationError names the guardrail."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from agentensemble import (
    Agent,
    Ensemble,
    EnsembleEvent,
    GuardrailChecked,
    GuardrailInput,
    GuardrailResult,
    GuardrailViolationError,
    Task,
    TaskExecutionError,
    TaskHandlerContext,
    TaskOutput,
)
from agentensemble.testing import ScriptedChatModel


class Recorder:
    def __init__(self) -> None:
        self.events: list[EnsembleEvent] = []

    def on_event(self, event: EnsembleEvent) -> None:
        self.events.append(event)

    @property
    def checks(self) -> list[GuardrailChecked]:
        return [e for e in self.events if isinstance(e, GuardrailChecked)]


def no_secrets(task_input: GuardrailInput) -> GuardrailResult:
    if "password" in task_input.description.lower():
        return GuardrailResult.failure("the task mentions a password")
    return GuardrailResult.success()


async def short_enough(output: TaskOutput) -> GuardrailResult:
    if len(output.raw) > 20:
        return GuardrailResult.failure(f"{len(output.raw)} characters, at most 20")
    return GuardrailResult.success()


def build(
    model: ScriptedChatModel, description: str = "Summarise {topic}", **options: Any
) -> tuple[Ensemble, Recorder]:
    recorder = Recorder()
    agent = Agent(role="Writer", goal="Write", llm=model)
    task = Task(description=description, agent=agent, **options)
    return Ensemble(tasks=[task], listeners=[recorder]), recorder


def test_input_failure_stops_the_task_before_any_model_call() -> None:
    model = ScriptedChatModel(["never asked"])
    ensemble, recorder = build(model, "Find the admin password", input_guardrails=[no_secrets])

    with pytest.raises(TaskExecutionError) as info:
        ensemble.run()

    cause = info.value.__cause__
    assert isinstance(cause, GuardrailViolationError)
    assert (cause.guardrail, cause.kind) == ("no_secrets", "input")
    assert "no_secrets" in str(info.value) and "mentions a password" in str(info.value)
    assert model.requests == []
    (check,) = recorder.checks
    assert (check.kind, check.guardrail, check.passed) == ("input", "no_secrets", False)


def test_input_guardrail_sees_the_filled_task_and_the_inputs() -> None:
    seen: list[GuardrailInput] = []

    def remember(task_input: GuardrailInput) -> GuardrailResult:
        seen.append(task_input)
        return GuardrailResult.success()

    ensemble, recorder = build(ScriptedChatModel(["ok"]), input_guardrails=[remember])
    ensemble.run(inputs={"topic": "AI"})

    assert seen[0].description == "Summarise AI"
    assert seen[0].inputs == {"topic": "AI"}
    assert seen[0].agent_role == "Writer"
    assert [c.passed for c in recorder.checks] == [True]


def test_output_failure_is_fed_back_and_the_corrected_answer_kept() -> None:
    model = ScriptedChatModel(["a far too long answer for this", "short answer"])
    ensemble, recorder = build(model, output_guardrails=[short_enough])

    output = ensemble.run(inputs={"topic": "AI"})

    assert output.raw == "short answer"
    feedback = model.requests[1].last_user_content
    assert "short_enough" in feedback and "at most 20" in feedback
    assert [(c.passed, c.attempt) for c in recorder.checks] == [(False, 1), (True, 2)]


def test_output_failure_after_the_bound_raises_naming_the_guardrail() -> None:
    model = ScriptedChatModel(["x" * 30, "y" * 30])
    ensemble, recorder = build(model, output_guardrails=[short_enough], max_output_retries=1)

    with pytest.raises(TaskExecutionError) as info:
        ensemble.run(inputs={"topic": "AI"})

    cause = info.value.__cause__
    assert isinstance(cause, GuardrailViolationError)
    assert (cause.guardrail, cause.kind, cause.attempts) == ("short_enough", "output", 2)
    assert len(model.requests) == 2
    assert len(recorder.checks) == 2


def test_output_guardrails_see_the_parsed_value() -> None:
    class Score(BaseModel):
        value: int

    def in_range(output: TaskOutput) -> GuardrailResult:
        ok = 0 <= output.parsed.value <= 10
        return GuardrailResult.success() if ok else GuardrailResult.failure("score out of 0-10")

    model = ScriptedChatModel(['{"value": 99}', '{"value": 7}'])
    ensemble, _ = build(model, output_type=Score, output_guardrails=[in_range])

    assert ensemble.run(inputs={"topic": "AI"}).parsed == Score(value=7)


def test_guardrails_run_in_order_and_stop_at_the_first_failure() -> None:
    calls: list[str] = []

    def first(output: TaskOutput) -> GuardrailResult:
        calls.append("first")
        return GuardrailResult.failure("no")

    def second(output: TaskOutput) -> GuardrailResult:
        calls.append("second")
        return GuardrailResult.success()

    ensemble, _ = build(
        ScriptedChatModel(["a"]), output_guardrails=[first, second], max_output_retries=0
    )
    with pytest.raises(TaskExecutionError, match="'first'"):
        ensemble.run(inputs={"topic": "AI"})
    assert calls == ["first"]


def test_a_guardrail_returning_something_else_fails_the_task_clearly() -> None:
    def sloppy(output: TaskOutput) -> bool:
        return True

    ensemble, _ = build(ScriptedChatModel(["a"]), output_guardrails=[sloppy])
    with pytest.raises(TaskExecutionError, match="'sloppy' must return GuardrailResult"):
        ensemble.run(inputs={"topic": "AI"})


def test_handler_tasks_are_guarded_too() -> None:
    def handler(ctx: TaskHandlerContext) -> str:
        return "a long deterministic answer, over twenty"

    task = Task(description="Glue", handler=handler, output_guardrails=[short_enough])
    with pytest.raises(TaskExecutionError) as info:
        Ensemble(tasks=[task]).run()
    assert isinstance(info.value.__cause__, GuardrailViolationError)


@pytest.mark.parametrize("bad", ["not callable", 3])
def test_non_callables_are_refused_at_construction(bad: Any) -> None:
    with pytest.raises(ValidationError, match=r"output_guardrails\[0\] must be a callable"):
        Task(description="x", output_guardrails=[bad])


def test_failure_needs_a_message() -> None:
    with pytest.raises(ValueError, match="needs a message"):
        GuardrailResult.failure("  ")


def test_each_check_is_an_entry_in_the_trace() -> None:
    model = ScriptedChatModel(["a far too long answer for this", "short answer"])
    ensemble, _ = build(model, input_guardrails=[no_secrets], output_guardrails=[short_enough])

    output = ensemble.run(inputs={"topic": "AI"})

    assert output.trace is not None
    entries = [(g.kind, g.guardrail, g.passed, g.attempt) for g in output.trace.tasks[0].guardrails]
    assert entries == [
        ("input", "no_secrets", True, 1),
        ("output", "short_enough", False, 1),
        ("output", "short_enough", True, 2),
    ]
    assert "at most 20" in (output.trace.tasks[0].guardrails[1].message or "")
