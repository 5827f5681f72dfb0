"""Whole ensembles on the scripted model: prompts, context threading, outputs, validation."""

import asyncio
from datetime import timedelta

import pytest
from pydantic import BaseModel, ValidationError

from agentensemble import (
    Agent,
    ConfigurationError,
    Ensemble,
    ExitReason,
    LLMError,
    PromptTemplateError,
    Task,
    TaskExecutionError,
    TaskHandlerContext,
)
from agentensemble.testing import FunctionChatModel, ScriptedChatModel


def two_task_ensemble(model: ScriptedChatModel) -> Ensemble:
    researcher = Agent(role="Researcher", goal="Find facts about {topic}", llm=model)
    writer = Agent(role="Writer", goal="Write clearly", background="You write for engineers.")
    research = Task(description="Research {topic}", expected_output="Key facts", agent=researcher)
    write = Task(
        description="Write a paragraph about {topic}",
        expected_output="One paragraph",
        agent=writer,
        context=[research],
    )
    return Ensemble(tasks=[research, write], llm=model)


def test_two_tasks_thread_context_and_return_both_outputs() -> None:
    model = ScriptedChatModel(["Facts: A and B", "A paragraph using A and B"])
    result = two_task_ensemble(model).run(inputs={"topic": "AI"})

    assert [o.raw for o in result.task_outputs] == ["Facts: A and B", "A paragraph using A and B"]
    assert result.raw == "A paragraph using A and B"
    assert result.exit_reason is ExitReason.COMPLETED
    first, second = model.requests
    assert first.messages[0]["content"].startswith("You are Researcher.")
    assert "Goal: Find facts about AI" in first.messages[0]["content"]
    assert first.last_user_content == "## Task\nResearch AI\n\n## Expected Output\nKey facts"
    assert second.messages[0]["content"].startswith(
        "You are Writer.\nYou write for engineers.\nGoal: Write clearly"
    )
    assert second.last_user_content == (
        "## Context\n\n### Research AI (Researcher)\nFacts: A and B\n\n"
        "## Task\nWrite a paragraph about AI\n\n## Expected Output\nOne paragraph"
    )
    assert result.task_outputs[0].llm_calls == 1
    assert result.usage.total_tokens == sum(o.usage.total_tokens for o in result.task_outputs) > 0
    model.assert_all_consumed()


def test_arun_is_the_engine() -> None:
    model = ScriptedChatModel(["one", "two"])
    result = asyncio.run(two_task_ensemble(model).arun({"topic": "x"}))
    assert result.raw == "two"


@pytest.mark.anyio
async def test_run_works_inside_a_running_event_loop() -> None:
    model = ScriptedChatModel(["one", "two"])
    result = two_task_ensemble(model).run({"topic": "x"})  # as in Jupyter
    assert result.raw == "two"


def test_every_missing_template_variable_fails_before_any_model_call() -> None:
    model = ScriptedChatModel(["never used"])
    agent = Agent(role="{persona}", goal="g", llm=model)
    ensemble = Ensemble(tasks=[Task(description="About {topic} for {audience}", agent=agent)])
    with pytest.raises(PromptTemplateError) as info:
        ensemble.run({"topic": "AI"})
    assert info.value.missing == ["audience", "persona"]
    assert model.requests == []


def test_task_without_agent_gets_a_synthesised_one_on_the_ensemble_model() -> None:
    model = ScriptedChatModel(["done"])
    result = Ensemble(tasks=[Task(description="Summarise {{braces}} and {x}")], llm=model).run(
        {"x": "{not_a_variable}"}
    )
    assert result.raw == "done"
    system = model.requests[0].messages[0]["content"]
    assert system.startswith("You are Assistant.")
    assert "Summarise {braces} and {not_a_variable}" in system


def test_no_model_anywhere_fails_at_run_with_a_clear_error() -> None:
    ensemble = Ensemble(tasks=[Task(description="Do it", agent=Agent(role="R", goal="G"))])
    with pytest.raises(ConfigurationError, match="agent 'R' has no model"):
        ensemble.run()


def test_handler_tasks_need_no_model() -> None:
    seen: list[TaskHandlerContext] = []

    def first(ctx: TaskHandlerContext) -> str:
        seen.append(ctx)
        return f"hello {ctx.inputs['name']}"

    async def second(ctx: TaskHandlerContext) -> str:
        return ctx.context_outputs[0].raw.upper()

    t1 = Task(description="Greet {name}", handler=first)
    t2 = Task(description="Shout", handler=second, context=[t1])
    result = Ensemble(tasks=[t1, t2]).run({"name": "ada"})
    assert [o.raw for o in result.task_outputs] == ["hello ada", "HELLO ADA"]
    assert seen[0].description == "Greet ada"


class Summary(BaseModel):
    title: str
    points: list[str]


def test_typed_output_is_parsed_and_corrected_once() -> None:
    model = ScriptedChatModel(['{"title": "T"}', '```json\n{"title": "T", "points": ["a"]}\n```'])
    task = Task(description="Summarise", output_type=Summary)
    output = Ensemble(tasks=[task], llm=model).run().task_outputs[0]
    assert output.parsed == Summary(title="T", points=["a"])
    assert output.llm_calls == 2
    assert "points" in model.requests[1].last_user_content  # the correction names the field


def test_handler_may_return_a_model() -> None:
    task = Task(description="d", handler=lambda ctx: Summary(title="x", points=[]))
    output = Ensemble(tasks=[task]).run().task_outputs[0]
    assert output.parsed == Summary(title="x", points=[])
    assert output.raw == '{"title":"x","points":[]}'


def test_failure_keeps_completed_outputs() -> None:
    calls = {"n": 0}

    def flaky(messages: list[dict[str, object]], tools: object) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            raise LLMError("provider down", status_code=401)
        return "first output"

    model = FunctionChatModel(flaky)
    t1, t2 = Task(description="one"), Task(description="two")
    with pytest.raises(TaskExecutionError) as info:
        Ensemble(tasks=[t1, t2], llm=model).run()
    error = info.value
    assert [o.raw for o in error.completed_outputs] == ["first output"]
    assert error.task is t2
    assert isinstance(error.__cause__, LLMError)
    assert "Task 2 ('two')" in str(error)


def test_empty_answer_is_nudged_once_then_fails() -> None:
    model = ScriptedChatModel(["", "  "])
    with pytest.raises(TaskExecutionError, match="empty answer"):
        Ensemble(tasks=[Task(description="d")], llm=model).run()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Agent(role=" ", goal="g"), "role must be a non-blank string"),
        (lambda: Agent(role="r", goal=""), "goal must be a non-blank string"),
        (lambda: Agent(role="r", goal="g", max_iterations=0), "max_iterations"),
        (lambda: Agent(role="r", goal="g", llm=42), "llm must be a model name"),
        (lambda: Task(description=""), "description must be a non-blank string"),
        (lambda: Task(description="d", unknown=1), "unknown"),
        (lambda: Ensemble(tasks=[]), "tasks"),
        (lambda: Ensemble(tasks=[Task(description="d")], workflow="magic"), "workflow"),
        (lambda: Ensemble(tasks=[Task(description="d")], review_policy="sometimes"), "never"),
        (lambda: Ensemble(tasks=[Task(description="d")], listeners=[object()]), "on_event"),
    ],
)
def test_bad_construction_names_the_field(build: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        build()  # type: ignore[operator]


def test_context_task_must_be_earlier_in_the_ensemble() -> None:
    early, late = Task(description="early"), Task(description="late")
    early_uses_late = Task(description="uses late", context=[late])
    with pytest.raises(ValidationError, match="runs later"):
        Ensemble(tasks=[early_uses_late, late])
    with pytest.raises(ValidationError, match="not in this ensemble"):
        Ensemble(tasks=[Task(description="x", context=[early])])


def test_review_without_handler_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no review_handler"):
        Ensemble(tasks=[Task(description="d")], review_policy="after_every_task")


def test_outputs_carry_durations() -> None:
    model = ScriptedChatModel(["one", "two"])
    result = two_task_ensemble(model).run({"topic": "x"})
    assert result.total_duration >= timedelta(0)
    assert all(o.duration >= timedelta(0) for o in result.task_outputs)
