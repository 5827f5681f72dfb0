"""The approval gate holds for every tool shape that declares ``requires_approval``.

Attack: a tool written as a plain ``AgentTool`` subclass (not ``AbstractAgentTool``), or put in a
``ToolPipeline`` as a step, declared ``requires_approval = True``; the resolver counted it (a
review handler was demanded) but its body ran without the reviewer ever being asked. Each shape
below is run through a whole ensemble with a reviewer that refuses: its body must never run, the
reviewer must have been asked exactly once, and the model must read the rejection.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble import (
    AbstractAgentTool,
    Agent,
    AgentTool,
    ConfigurationError,
    Ensemble,
    EnsembleOutput,
    Task,
    ToolPipeline,
    ToolResult,
    TypedAgentTool,
    tool,
)
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble_review import (
    Continue,
    ExitEarly,
    OnTimeoutAction,
    Review,
    ReviewDecision,
    ScriptedReviewHandler,
)

RAN: list[str] = []


@pytest.fixture(autouse=True)
def _clean() -> None:
    RAN.clear()


class PlainSync(AgentTool):
    name = "plain_sync"
    description = "A plain AgentTool with a sync body"
    requires_approval = True

    def execute(self, input: str) -> ToolResult:
        RAN.append(input)
        return ToolResult.success(f"did {input}")


class PlainAsync(AgentTool):
    name = "plain_async"
    description = "A plain AgentTool with an async body"
    requires_approval = True

    async def aexecute(self, input: str) -> ToolResult:
        RAN.append(input)
        return ToolResult.success(f"did {input}")


class PlainRule(PlainSync):
    name = "plain_rule"
    requires_approval = staticmethod(lambda text: "danger" in text)  # type: ignore[assignment]


class PlainReview(PlainSync):
    name = "plain_review"
    requires_approval = Review.required(timeout=7)  # type: ignore[assignment]


class PlainArguments(AgentTool):
    name = "plain_arguments"
    description = "A plain AgentTool that takes JSON arguments"
    requires_approval = True

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"path": {"type": "string"}}}

    def execute(self, input: str) -> ToolResult:
        RAN.append(json.loads(input)["path"])
        return ToolResult.success("done")


class Instrumented(AbstractAgentTool):
    name = "instrumented"
    description = "An AbstractAgentTool"
    requires_approval = True

    def do_execute(self, input: str) -> str:
        RAN.append(input)
        return f"did {input}"


class InstrumentedAsync(AbstractAgentTool):
    name = "instrumented_async"
    description = "An async AbstractAgentTool with its own Review settings"
    requires_approval = Review.required(timeout=9)

    async def ado_execute(self, input: str) -> str:
        RAN.append(input)
        return f"did {input}"


class Path(BaseModel):
    path: str


class Typed(TypedAgentTool[Path]):
    name = "typed"
    description = "A typed-input tool"
    requires_approval = True

    def do_execute(self, input: Path) -> str:
        RAN.append(input.path)
        return "done"


@tool(requires_approval=True)
def decorated(path: str) -> str:
    """A decorated function."""
    RAN.append(path)
    return "done"


@tool(requires_approval=True)
async def decorated_async(path: str) -> str:
    """An async decorated function."""
    RAN.append(path)
    return "done"


@tool(requires_approval=Review.required(timeout=11, on_timeout=OnTimeoutAction.FAIL))
def decorated_review(path: str) -> str:
    """A decorated function with its own approval deadline."""
    RAN.append(path)
    return "done"


class Toolbox:
    @tool(requires_approval=True)
    def method(self, path: str) -> str:
        """A decorated method."""
        RAN.append(path)
        return "done"


class Echo(AbstractAgentTool):
    name = "echo"
    description = "Passes its input on"

    def do_execute(self, input: str) -> str:
        return input


@dataclass(frozen=True)
class Shape:
    label: str
    make: Callable[[], object]
    tool_name: str
    arguments: dict[str, Any]


SHAPES = [
    Shape("AgentTool sync", PlainSync, "plain_sync", {"input": "x"}),
    Shape("AgentTool async", PlainAsync, "plain_async", {"input": "x"}),
    Shape("AgentTool callable rule", PlainRule, "plain_rule", {"input": "danger"}),
    Shape("AgentTool Review.required", PlainReview, "plain_review", {"input": "x"}),
    Shape("AgentTool with a schema", PlainArguments, "plain_arguments", {"path": "x"}),
    Shape("AbstractAgentTool", Instrumented, "instrumented", {"input": "x"}),
    Shape(
        "AbstractAgentTool async + Review", InstrumentedAsync, "instrumented_async", {"input": "x"}
    ),
    Shape("TypedAgentTool", Typed, "typed", {"path": "x"}),
    Shape("@tool function", lambda: decorated, "decorated", {"path": "x"}),
    Shape("@tool async function", lambda: decorated_async, "decorated_async", {"path": "x"}),
    Shape("@tool Review.required", lambda: decorated_review, "decorated_review", {"path": "x"}),
    Shape("@tool method (object)", Toolbox, "method", {"path": "x"}),
    Shape("@tool bound method", lambda: Toolbox().method, "method", {"path": "x"}),
    Shape(
        "pipeline: AgentTool step",
        lambda: ToolPipeline([Echo(), PlainSync()], name="pipe"),
        "pipe",
        {"input": "x"},
    ),
    Shape(
        "pipeline: async AgentTool step",
        lambda: ToolPipeline([PlainAsync()], name="pipe"),
        "pipe",
        {"input": "x"},
    ),
    Shape(
        "pipeline: AbstractAgentTool step",
        lambda: ToolPipeline([Echo(), Instrumented()], name="pipe"),
        "pipe",
        {"input": "x"},
    ),
    Shape(
        "pipeline: @tool step",
        lambda: ToolPipeline([Echo(), decorated], name="pipe"),
        "pipe",
        {"input": "x"},
    ),
    Shape(
        "nested pipeline: AgentTool step",
        lambda: ToolPipeline([Echo(), ToolPipeline([Echo(), PlainSync()])], name="pipe"),
        "pipe",
        {"input": "x"},
    ),
]
IDS = [shape.label for shape in SHAPES]


def run(shape: Shape, decisions: list[ReviewDecision]) -> tuple[EnsembleOutput, Any]:
    model = ScriptedChatModel([tool_call(shape.tool_name, shape.arguments), "finished"])
    reviewer = ScriptedReviewHandler(decisions)
    agent = Agent(role="Clerk", goal="Use the tool", tools=[shape.make()], llm=model)
    output = Ensemble(tasks=[Task(description="Go", agent=agent)], review_handler=reviewer).run()
    return output, reviewer


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_a_refusing_reviewer_keeps_the_body_of_every_tool_shape_from_running(shape: Shape) -> None:
    output, reviewer = run(shape, [ExitEarly("not this one")])
    assert RAN == []
    assert len(reviewer.requests) == 1
    (record,) = output.task_outputs[0].tool_calls
    assert not record.is_success
    assert "Rejected by reviewer: not this one" in record.output


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_an_approving_reviewer_lets_every_tool_shape_run_once(shape: Shape) -> None:
    output, reviewer = run(shape, [Continue()])
    assert RAN == ["x"] or RAN == ["danger"]
    assert len(reviewer.requests) == 1
    assert output.task_outputs[0].tool_calls[0].is_success


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_every_tool_shape_needing_approval_is_refused_without_a_review_handler(
    shape: Shape,
) -> None:
    agent = Agent(role="Clerk", goal="Use the tool", tools=[shape.make()], llm=ScriptedChatModel())
    with pytest.raises(ConfigurationError, match="review_handler"):
        Ensemble(tasks=[Task(description="Go", agent=agent)])


def test_a_conditional_rule_on_a_plain_tool_lets_harmless_input_through_unasked() -> None:
    shape = Shape("rule", PlainRule, "plain_rule", {"input": "harmless"})
    output, reviewer = run(shape, [])
    assert RAN == ["harmless"]
    assert reviewer.requests == []
    assert output.task_outputs[0].tool_calls[0].is_success


@pytest.mark.parametrize(
    ("shape", "seconds", "on_timeout"),
    [
        (SHAPES[3], 7, OnTimeoutAction.EXIT_EARLY),
        (SHAPES[6], 9, OnTimeoutAction.EXIT_EARLY),
        (SHAPES[10], 11, OnTimeoutAction.FAIL),
    ],
    ids=["AgentTool", "AbstractAgentTool", "@tool"],
)
def test_a_tools_own_review_setting_is_the_deadline_the_request_carries(
    shape: Shape, seconds: int, on_timeout: OnTimeoutAction
) -> None:
    _, reviewer = run(shape, [Continue()])
    (request,) = reviewer.requests
    assert request.timeout.total_seconds() == seconds
    assert request.on_timeout is on_timeout


def test_review_skip_as_a_tools_setting_asks_nothing_and_needs_no_handler() -> None:
    @tool(requires_approval=Review.skip())
    def harmless(path: str) -> str:
        """Harmless."""
        RAN.append(path)
        return "done"

    model = ScriptedChatModel([tool_call("harmless", {"path": "x"}), "finished"])
    agent = Agent(role="Clerk", goal="Use the tool", tools=[harmless], llm=model)
    Ensemble(tasks=[Task(description="Go", agent=agent)]).run()
    assert RAN == ["x"]


@pytest.mark.parametrize(
    "rule", [Review, "yes", 1.5], ids=["the Review class", "a string", "a float"]
)
def test_a_requires_approval_that_means_nothing_is_refused_when_the_tool_is_made(
    rule: object,
) -> None:
    with pytest.raises(ConfigurationError, match="requires_approval"):

        @tool(requires_approval=rule)
        def odd(path: str) -> str:
            """Odd."""
            return path
