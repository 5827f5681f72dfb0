"""Whatever text a model sends as a tool call's arguments, the call ends in a ToolResult.

Every kind of tool goes through ``ToolResolver().resolve([...])`` and ``ExecutableTool.run``
with arbitrary text, arbitrary JSON and near-miss argument objects. The run never raises; a
failure names the tool and says what was wrong (``Invalid arguments for '<name>': ...``), so the
model can correct itself; it succeeds exactly when the framework's own parsing accepts the text.
The parsers themselves (``extract_input``, ``validate_arguments``) raise nothing but
``ToolArgumentsError``.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Literal

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentensemble import (
    AbstractAgentTool,
    AgentTool,
    ToolArgumentsError,
    ToolResolver,
    ToolResult,
    TypedAgentTool,
    tool,
)
from agentensemble.tools import ExecutableTool, FunctionTool, ToolPipeline
from agentensemble.tools.resolver import extract_input
from agentensemble.tools.schema import validate_arguments

SETTINGS = settings(max_examples=150, deadline=None)


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


class Item(BaseModel):
    label: str
    weight: float = 1.0


class Order(BaseModel):
    items: list[Item]
    note: str | None = None


@tool
def plan(
    count: int,
    ratio: float,
    colour: Colour,
    mode: Literal["fast", "slow"] = "fast",
    tags: list[str] | None = None,
    items: list[Item] | None = None,
    extra: dict[str, int] | None = None,
) -> str:
    """Check that validation delivered what the signature promised."""
    assert isinstance(count, int) and isinstance(ratio, float) and isinstance(colour, Colour)
    assert all(isinstance(item, Item) for item in items or [])
    return "planned"


@tool
async def search(query: str, limit: int = 5) -> list[str]:
    """An async function tool."""
    return [query] * min(limit, 2)


class Notes:
    @tool
    def add_note(self, text: str, pinned: bool = False) -> str:
        """A method tool."""
        return f"{'pinned ' if pinned else ''}{text}"


class Echo(AgentTool):
    name = "echo"
    description = "Returns its input."

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input)


class Upper(AbstractAgentTool):
    name = "upper"
    description = "Upper-cases its input."

    def do_execute(self, input: str) -> str:
        return input.upper()


class PlaceOrder(TypedAgentTool[Order]):
    name = "place_order"
    description = "Places an order."

    def do_execute(self, input: Order) -> str:
        assert isinstance(input, Order)
        return f"{len(input.items)} items"


TOOLS = ToolResolver().resolve(
    [plan, search, Notes(), Echo(), Upper(), PlaceOrder(), ToolPipeline.of(Echo(), Upper())]
)
PARAMETER_NAMES = sorted(
    {name for t in TOOLS for name in t.parameters.get("properties", {})} | {"input", "query"}
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(PARAMETER_NAMES) | st.text(max_size=5), children, max_size=4
        )
    ),
    max_leaves=10,
)
near_misses = st.dictionaries(st.sampled_from(PARAMETER_NAMES), json_values, max_size=5)
arguments_text = st.one_of(
    st.text(max_size=40),
    json_values.map(json.dumps),
    near_misses.map(json.dumps),
    near_misses.map(lambda d: json.dumps(d)[:-1]),  # cut short, as a truncated answer would be
)
HOSTILE = [
    "",
    "   ",
    "null",
    "NaN",
    "-Infinity",
    '{"count": NaN, "ratio": Infinity, "colour": "red"}',
    "[" * 50_000 + "]" * 50_000,  # deeper than the JSON parser's recursion limit
    '{"input": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "1" * 5_000,  # more digits than Python converts to an int
    '{"count": ' + "9" * 5_000 + ', "ratio": 1, "colour": "red"}',
    '{"input": ' + "7" * 5_000 + "}",
    '"\\ud800"',  # a lone surrogate, escaped
    '{"query": "\\udfff"}',
    "\x00",
    '{"count": 1, "ratio": 1, "colour": "red", "colour": "blue"}',
]


def parses(executable: ExecutableTool, text: str) -> bool:
    """Whether the framework's own parsing accepts ``text`` for this tool."""
    inner = executable.tool
    try:
        if isinstance(inner, FunctionTool):
            validate_arguments(inner.definition.schema.model, text, executable.name)
        elif isinstance(inner, TypedAgentTool):
            validate_arguments(inner.input_model, text, executable.name)
        else:
            extract_input(text, executable.name)
    except ToolArgumentsError:
        return False
    return True


def check_run(executable: ExecutableTool, text: str) -> None:
    result = anyio.run(executable.run, text)

    assert isinstance(result, ToolResult)
    assert isinstance(result.output, str)
    if result.is_success:
        assert parses(executable, text)
    else:
        assert not parses(executable, text)
        assert result.error_message is not None
        assert result.error_message.startswith(f"Invalid arguments for '{executable.name}'")


@SETTINGS
@given(executable=st.sampled_from(list(TOOLS)), text=arguments_text)
def test_any_arguments_text_ends_in_a_tool_result(executable: ExecutableTool, text: str) -> None:
    check_run(executable, text)


@pytest.mark.parametrize("text", HOSTILE, ids=[repr(t[:24]) for t in HOSTILE])
@pytest.mark.parametrize("name", TOOLS.names)
def test_hostile_arguments_end_in_a_tool_result(name: str, text: str) -> None:
    executable = TOOLS.get(name)
    assert executable is not None
    check_run(executable, text)


@SETTINGS
@given(text=arguments_text)
@example(text="[" * 50_000 + "]" * 50_000)
@example(text="1" * 5_000)
def test_the_parsers_raise_only_tool_arguments_errors(text: str) -> None:
    for parse in (
        lambda: extract_input(text, "echo"),
        lambda: validate_arguments(Order, text, "place_order"),
    ):
        try:
            parse()
        except ToolArgumentsError as error:
            assert str(error).startswith("Invalid arguments for ")
