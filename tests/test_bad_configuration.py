"""Wrong setups, one row each: ONE clear error, raised before any model call.

Construction-time validation of Agent, Task and Ensemble raises ``pydantic.ValidationError``
naming the field (``loc``) and the rule; wiring problems found when tools and reviews are
resolved raise ``ConfigurationError`` (or its subclasses) naming the offending task, tool or
setting. Every row builds its setup with a model that fails the test if it is ever called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import (
    LLM,
    AbstractAgentTool,
    Agent,
    AgentTool,
    ChatModel,
    ConfigurationError,
    Ensemble,
    PromptTemplateError,
    Task,
    ToolNameError,
    ToolResult,
    tool,
)
from agentensemble.testing import FunctionChatModel
from agentensemble_review import AutoApproveReviewHandler, Review, ReviewPolicy


def never_called(messages: Any, tools: Any) -> str:
    pytest.fail("a model was called although the setup is wrong")


class Echo(AgentTool):
    name = "echo"
    description = "Returns its input."

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input)


class OtherEcho(Echo):
    description = "Another tool that is also called echo."


class Spaced(Echo):
    name = "look up"


class Wordy(Echo):
    name = "x" * 65


class Dangerous(AbstractAgentTool):
    name = "drop_tables"
    description = "Drops every table."
    requires_approval = True

    def do_execute(self, input: str) -> str:
        return "dropped"


@tool(requires_approval=lambda arguments: "prod" in arguments)
def deploy(target: str) -> str:
    """Deploy to a target."""
    return f"deployed to {target}"


class NotAHandler:
    review = "approve everything"  # an attribute, not a method


class Quiet:
    """Looks like a listener but has no on_event."""

    def notify(self, event: object) -> None: ...


def agent(model: ChatModel, **overrides: Any) -> Agent:
    settings: dict[str, Any] = {"role": "Researcher", "goal": "Find facts", "llm": model}
    settings.update(overrides)
    return Agent(**settings)


def task(model: ChatModel, description: str = "Research tides", **overrides: Any) -> Task:
    return Task(description=description, agent=agent(model), **overrides)


def context_not_in_ensemble(model: ChatModel) -> None:
    outside = task(model, "Gather sources")
    Ensemble(tasks=[task(model, "Summarise sources", context=[outside])])


def context_runs_later(model: ChatModel) -> None:
    later = task(model, "Gather sources")
    Ensemble(tasks=[task(model, "Summarise sources", context=[later]), later])


@dataclass(frozen=True)
class Row:
    id: str
    build: Callable[[ChatModel], object]
    error: type[Exception]
    names: tuple[str, ...]  # fragments the message must contain
    field: str | None = None  # for ValidationError: the field it reports (None: the model)


ROWS = [
    Row("empty role", lambda m: agent(m, role=""), ValidationError, ("non-blank",), "role"),
    Row("blank goal", lambda m: agent(m, goal="  \n"), ValidationError, ("non-blank",), "goal"),
    Row(
        "blank description",
        lambda m: task(m, description="   "),
        ValidationError,
        ("description must be a non-blank string",),
        "description",
    ),
    Row(
        "tool name with spaces",
        lambda m: agent(m, tools=[Spaced()]),
        ValidationError,
        ("'look up'", "^[A-Za-z0-9_]+$"),
        "tools",
    ),
    Row(
        "tool name over 64 characters",
        lambda m: task(m, tools=[Wordy()]),
        ValidationError,
        ("65 characters long; at most 64",),
        "tools",
    ),
    Row(
        "decorated function with a bad name",
        lambda m: tool(name="fetch-page")(lambda url: url),
        ToolNameError,
        ("'fetch-page'", "@tool(name=...)"),
    ),
    Row(
        "duplicate tools on one agent",
        lambda m: agent(m, tools=[Echo(), OtherEcho()]),
        ConfigurationError,
        ("Duplicate tool name: 'echo'",),
    ),
    Row(
        "duplicate tools between agent and task",
        lambda m: Ensemble(
            tasks=[Task(description="Echo", agent=agent(m, tools=[Echo()]), tools=[OtherEcho()])]
        ),
        ConfigurationError,
        ("Duplicate tool name: 'echo'", "task 1 ('Echo')", "agent 'Researcher'"),
    ),
    Row(
        "an object that is no tool",
        lambda m: agent(m, tools=[{"name": "echo"}]),
        ConfigurationError,
        ("Object of type 'dict' is not a tool", "@tool"),
    ),
    Row(
        "a tool class instead of an instance",
        lambda m: agent(m, tools=[Echo]),
        ConfigurationError,
        ("the class 'Echo'", "Echo(...)"),
    ),
    Row(
        "context task not in the ensemble",
        context_not_in_ensemble,
        ValidationError,
        ("'Summarise sources'", "'Gather sources'", "not in this ensemble's tasks"),
    ),
    Row(
        "context task later in the list",
        context_runs_later,
        ValidationError,
        ("'Gather sources'", "runs later (task 2)"),
    ),
    Row(
        "review policy with no handler",
        lambda m: Ensemble(tasks=[task(m)], review_policy=ReviewPolicy.AFTER_EVERY_TASK),
        ConfigurationError,
        ("review_policy='after_every_task'", "no review_handler", "review_handler="),
    ),
    Row(
        "task review with no handler",
        lambda m: Ensemble(tasks=[task(m), task(m, "Write it up", review=Review.required())]),
        ConfigurationError,
        ("task 2 ('Write it up')", "review=Review.required", "no review_handler"),
    ),
    Row(
        "before_review with no handler",
        lambda m: Ensemble(tasks=[task(m, before_review=Review.required())]),
        ConfigurationError,
        ("task 1 ('Research tides')", "before_review=Review.required", "no review_handler"),
    ),
    Row(
        "tool requiring approval with no handler",
        lambda m: Ensemble(
            tasks=[Task(description="Clean up", agent=agent(m, tools=[Dangerous()]))]
        ),
        ConfigurationError,
        ("drop_tables", "require approval", "no review_handler"),
    ),
    Row(
        "decorated tool with conditional approval and no handler",
        lambda m: Ensemble(tasks=[task(m, tools=[deploy])]),
        ConfigurationError,
        ("deploy", "require approval", "no review_handler"),
    ),
    Row(
        "negative max_iterations",
        lambda m: agent(m, max_iterations=-3),
        ValidationError,
        ("greater than or equal to 1",),
        "max_iterations",
    ),
    Row(
        "zero max_iterations",
        lambda m: agent(m, max_iterations=0),
        ValidationError,
        ("greater than or equal to 1",),
        "max_iterations",
    ),
    Row(
        "unknown workflow",
        lambda m: Ensemble(tasks=[task(m)], workflow="round_robin"),  # type: ignore[arg-type]
        ValidationError,
        ("'sequential'", "round_robin"),
        "workflow",
    ),
    Row(
        "unknown review_policy",
        lambda m: Ensemble(tasks=[task(m)], review_policy="sometimes"),
        ValidationError,
        ("never, after_every_task, after_last_task", "'sometimes'"),
        "review_policy",
    ),
    Row(
        "a listener without on_event",
        lambda m: Ensemble(tasks=[task(m)], listeners=[Quiet()]),
        ValidationError,
        ("on_event(event)", "Quiet"),
        "listeners",
    ),
    Row(
        "a review handler that is no handler",
        lambda m: Ensemble(tasks=[task(m)], review_handler=object()),
        ValidationError,
        ("review(request) or areview(request)", "object"),
        "review_handler",
    ),
    Row(
        "a review handler whose review is not callable",
        lambda m: Ensemble(tasks=[task(m)], review_handler=NotAHandler()),
        ValidationError,
        ("review(request) or areview(request)", "NotAHandler"),
        "review_handler",
    ),
    Row(
        "missing template variables, all named at once",
        lambda m: Ensemble(
            tasks=[
                Task(
                    description="Research {topic} for {audience}",
                    expected_output="Facts in {style}",
                    agent=agent(m, role="{persona}", background="Writes for {audience}"),
                )
            ]
        ).run({"topic": "tides"}),
        PromptTemplateError,
        ("'{audience}', '{persona}', '{style}'",),
    ),
    Row(
        "no model anywhere",
        lambda m: Ensemble(tasks=[Task(description="Research tides")]).run(),
        ConfigurationError,
        ("task 1 ('Research tides')", "has no model", "Ensemble(llm=...)"),
    ),
    Row(
        "an agent with no model in an ensemble with none",
        lambda m: Ensemble(
            tasks=[task(m), Task(description="Write", agent=Agent(role="Writer", goal="Write"))]
        ).run(),
        ConfigurationError,
        ("task 2 ('Write')", "agent 'Writer' has no model"),
    ),
    Row(
        "a model that is no model",
        lambda m: agent(m, llm=42),
        ValidationError,
        ("async complete()", "int"),
        "llm",
    ),
    Row("no tasks", lambda m: Ensemble(tasks=[]), ValidationError, ("at least 1 item",), "tasks"),
    Row(
        "a task with both an agent and a handler",
        lambda m: task(m, handler=lambda ctx: "done"),
        ValidationError,
        ("either an agent or a handler, not both",),
    ),
    Row(
        "a review that is no Review",
        lambda m: task(m, review=True),
        ValidationError,
        ("Review.required(...) or Review.skip()", "bool"),
        "review",
    ),
    Row(
        "a misspelt keyword",
        lambda m: Agent(role="Researcher", goal="Find facts", tols=[Echo()]),  # type: ignore[call-arg]
        ValidationError,
        ("Agent has no field 'tols'", "did you mean tools=...?"),
        None,  # the hint names the keyword itself, as every foreign-name hint does
    ),
    Row(
        "a model timeout of zero",
        lambda m: LLM("openai/gpt-4o-mini", timeout=0),
        ValidationError,
        ("greater than 0",),
        "timeout",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_a_wrong_setup_gives_one_clear_error_before_any_model_call(row: Row) -> None:
    model = FunctionChatModel(never_called)

    with pytest.raises(row.error) as info:
        row.build(model)

    message = str(info.value)
    for fragment in row.names:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    if isinstance(info.value, ValidationError):
        [error] = info.value.errors()  # one error, not a cascade
        assert error["loc"] == ((row.field,) if row.field else ())
    assert model.requests == []


def test_every_missing_variable_is_listed_on_the_error() -> None:
    model = FunctionChatModel(never_called)
    ensemble = Ensemble(
        tasks=[
            Task(description="About {topic}", agent=agent(model, goal="Serve {audience}")),
            Task(
                description="Then {topic} again", expected_output="In {style}", agent=agent(model)
            ),
        ]
    )
    with pytest.raises(PromptTemplateError) as info:
        ensemble.run({})
    assert info.value.missing == ["audience", "style", "topic"]
    assert model.requests == []


def test_with_a_handler_the_same_review_setups_are_accepted() -> None:
    model = FunctionChatModel(lambda messages, tools: "done")
    handler = AutoApproveReviewHandler()
    ensemble = Ensemble(
        tasks=[task(model, before_review=Review.required(), tools=[deploy], review=Review.skip())],
        review_handler=handler,
        review_policy=ReviewPolicy.AFTER_EVERY_TASK,
    )
    assert ensemble.run().raw == "done"
