"""Tools end to end through litellm and a real local server: specs, order, errors, return rule."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Any

import pytest
from openai_server import OpenAIServer
from pydantic import BaseModel, Field

from agentensemble import (
    LLM,
    AbstractAgentTool,
    Agent,
    AgentTool,
    Ensemble,
    RetryPolicy,
    ReturnBehavior,
    Task,
    ToolResult,
    TypedAgentTool,
    tool,
)

pytestmark = pytest.mark.e2e

FAST = RetryPolicy(max_attempts=2, initial_backoff=0.001, max_backoff=0.01, jitter=0)


class Unit(str, Enum):
    C = "celsius"
    F = "fahrenheit"


@tool
def convert(value: float, unit: Annotated[Unit, "target unit"] = Unit.C) -> str:
    """Convert a temperature.

    Args:
        value: the temperature to convert
    """
    return f"{value} -> {unit.value}"


class Shout(AgentTool):
    name = "shout"
    description = "Upper-cases its input."

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input.upper())


class Point(BaseModel):
    x: int = Field(description="horizontal")
    y: int


class Distance(TypedAgentTool[Point]):
    name = "distance"
    description = "Manhattan distance from the origin."

    def do_execute(self, input: Point) -> str:
        return str(abs(input.x) + abs(input.y))


class Notebook:
    def __init__(self) -> None:
        self.notes: list[str] = []

    @tool
    def write_note(self, text: str) -> str:
        """Store a note."""
        self.notes.append(text)
        return f"stored {len(self.notes)}"

    @tool
    def count_notes(self) -> int:
        """How many notes are stored."""
        return len(self.notes)


def llm(server: OpenAIServer) -> LLM:
    return LLM(
        model="openai/test-model",
        api_base=server.base_url,
        api_key="sk-test",
        retry_policy=FAST,
        timeout=10.0,
    )


def run(server: OpenAIServer, tools: list[Any], **agent: Any) -> Any:
    worker = Agent(role="Worker", goal="Use tools", tools=tools, llm=llm(server), **agent)
    return Ensemble(tasks=[Task(description="Do the job", agent=worker)]).run()


def test_four_kinds_of_tool_with_exact_specs_and_ordered_results(
    openai_server: OpenAIServer,
) -> None:
    notebook = Notebook()
    openai_server.push_tool_calls(
        [
            ("convert", {"value": 21.5, "unit": "fahrenheit"}),
            ("shout", {"input": "hi"}),
            ("distance", {"x": -3, "y": 4}),
            ("write_note", {"text": "remember"}),
        ]
    )
    # a second turn: calls of one turn run concurrently, so a read that must see the write
    # comes after it, as a model would ask for it
    openai_server.push_tool_calls([("count_notes", {})])
    openai_server.push_text("all done")

    output = run(openai_server, [convert, Shout(), Distance(), notebook]).task_outputs[0]

    first, second, third = openai_server.requests
    specs = {spec["function"]["name"]: spec for spec in first["tools"]}
    assert list(specs) == ["convert", "shout", "distance", "write_note", "count_notes"]
    assert all(spec["type"] == "function" for spec in specs.values())
    assert specs["shout"]["function"] == {
        "name": "shout",
        "description": "Upper-cases its input.",
        "parameters": {
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "The input to pass to the tool"}
            },
            "required": ["input"],
        },
    }
    convert_spec = specs["convert"]["function"]
    assert convert_spec["description"].startswith("Convert a temperature.")
    params = convert_spec["parameters"]
    assert params["required"] == ["value"]
    assert params["properties"]["value"]["type"] == "number"
    assert params["properties"]["value"]["description"] == "the temperature to convert"
    assert json.dumps(params["properties"]["unit"]).count("celsius") >= 1
    assert specs["distance"]["function"]["parameters"]["required"] == ["x", "y"]
    assert specs["distance"]["function"]["parameters"]["properties"]["x"]["description"] == (
        "horizontal"
    )
    assert specs["count_notes"]["function"]["parameters"]["properties"] == {}

    results = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert results == ["21.5 -> fahrenheit", "HI", "7", "stored 1"]  # in call order
    assert [m["content"] for m in third["messages"] if m["role"] == "tool"][-1] == "1"
    assert [r.name for r in output.tool_calls] == [
        "convert",
        "shout",
        "distance",
        "write_note",
        "count_notes",
    ]
    assert output.raw == "all done"


@tool
def explode(x: int) -> str:
    """Raises."""
    raise RuntimeError(f"exploded on {x}")


class Refuse(AgentTool):
    name = "refuse"
    description = "Always fails."

    def execute(self, input: str) -> ToolResult:
        return ToolResult.failure(f"refused {input}")


def test_failures_reach_the_model_and_the_run_recovers(openai_server: OpenAIServer) -> None:
    openai_server.push_tool_calls(
        [
            ("refuse", {"input": "a"}),
            ("explode", {"x": 1}),
            ("no_such_tool", {}),
            ("explode", '{"x": '),
            ("explode", {"x": "not a number"}),
        ]
    )
    openai_server.push_text("recovered")

    output = run(openai_server, [Refuse(), explode]).task_outputs[0]

    results = [m["content"] for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0] == "Error: refused a"
    assert results[1] == "Error: RuntimeError: exploded on 1"
    assert results[2].startswith(
        "Error: Unknown tool 'no_such_tool'. Available tools: refuse, explode"
    )
    assert results[3].startswith("Error: Invalid arguments for 'explode'")
    assert "x" in results[4] and results[4].startswith("Error: ")
    assert output.raw == "recovered"
    assert [r.is_success for r in output.tool_calls] == [False] * 5


class Behaving(AbstractAgentTool):
    def __init__(self, name: str, behavior: ReturnBehavior) -> None:
        self.name = name
        self.description = f"A {behavior.value} tool."
        self.return_behavior = behavior

    def do_execute(self, input: str) -> str:
        return f"{self.name}:{input}"


BEHAVIORS = {
    "T": ReturnBehavior.TO_LLM,
    "I": ReturnBehavior.IMMEDIATE,
    "L": ReturnBehavior.IMMEDIATE_IF_LAST,
}
MATRIX = [
    ("T", False),
    ("TT", False),
    ("I", True),
    ("II", True),
    ("TI", False),
    ("IT", False),
    ("L", True),
    ("LL", True),
    ("TL", True),
    ("LT", False),
    ("IL", True),
    ("LI", True),
    ("TIL", True),
    ("TLI", False),
    ("ITL", True),
    ("ILT", False),
    ("LTI", False),
    ("LIT", False),
]


@pytest.mark.parametrize(("calls", "returns"), MATRIX)
def test_return_behaviour_matrix_counts_model_requests(
    openai_server: OpenAIServer, calls: str, returns: bool
) -> None:
    tools = [Behaving(f"tool_{k.lower()}", BEHAVIORS[k]) for k in "TIL"]
    openai_server.push_tool_calls(
        [(f"tool_{k.lower()}", {"input": str(n)}) for n, k in enumerate(calls)]
    )
    openai_server.push_text("reprocessed")

    output = run(openai_server, tools).task_outputs[0]

    assert len(openai_server.requests) == (1 if returns else 2)
    assert output.returned_immediately is returns
    if returns:
        assert output.raw == "\n\n".join(f"tool_{k.lower()}:{n}" for n, k in enumerate(calls))
    else:
        assert output.raw == "reprocessed"


def test_a_failed_call_means_reprocess_even_when_all_are_immediate(
    openai_server: OpenAIServer,
) -> None:
    tools = [Behaving("tool_i", ReturnBehavior.IMMEDIATE), Refuse()]
    Refuse.return_behavior = ReturnBehavior.IMMEDIATE
    try:
        openai_server.push_tool_calls([("tool_i", {"input": "a"}), ("refuse", {"input": "b"})])
        openai_server.push_text("reprocessed")
        output = run(openai_server, tools).task_outputs[0]
    finally:
        Refuse.return_behavior = ReturnBehavior.TO_LLM
    assert len(openai_server.requests) == 2
    assert output.returned_immediately is False
