"""@tool: functions and methods become tools; they stay ordinary callables for their owners."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Annotated

import pytest
from pydantic import BaseModel

from agentensemble.errors import ToolNameError
from agentensemble.tools import (
    FunctionTool,
    ReturnBehavior,
    ToolContext,
    ToolResult,
    tool,
    tool_definition,
    use_tool_context,
)
from agentensemble_review import Continue, Edit, ExitEarly, ReviewRequest


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="weather", description="Current weather", return_behavior=ReturnBehavior.IMMEDIATE)
async def get_weather(city: Annotated[str, "city name"], unit: str = "celsius") -> str:
    await asyncio.sleep(0)
    return f"12 degrees {unit} in {city}"


class Forecast(BaseModel):
    city: str
    high: int


@dataclasses.dataclass
class Reading:
    station: str
    value: float


@tool
def forecast(city: str) -> Forecast:
    """Forecast for a city."""
    return Forecast(city=city, high=20)


@tool
def reading() -> Reading:
    """The latest reading."""
    return Reading("blindern", 3.5)


@tool
def log_event(event: str) -> None:
    """Record an event."""


@tool
def fail_on_purpose() -> ToolResult:
    """Returns a failure result itself."""
    return ToolResult.failure("service down")


def _run(fn: object, arguments: str) -> ToolResult:
    definition = tool_definition(fn)
    assert definition is not None
    with use_tool_context(ToolContext()):
        return asyncio.run(FunctionTool(definition, definition.function).aexecute(arguments))


def test_decorated_functions_stay_callable() -> None:
    assert add(2, 3) == 5
    assert asyncio.run(get_weather("Oslo")) == "12 degrees celsius in Oslo"
    assert add.__name__ == "add" and add.__doc__ == "Add two integers."


def test_definition_from_the_bare_decorator() -> None:
    definition = tool_definition(add)
    assert definition is not None
    assert (definition.name, definition.description) == ("add", "Add two integers.")
    assert definition.return_behavior is ReturnBehavior.TO_LLM
    assert definition.requires_approval is False
    assert not definition.is_async and not definition.is_method


def test_definition_from_options() -> None:
    definition = tool_definition(get_weather)
    assert definition is not None
    assert (definition.name, definition.description) == ("weather", "Current weather")
    assert definition.return_behavior is ReturnBehavior.IMMEDIATE
    assert definition.is_async
    assert definition.schema.parameters["properties"]["city"] == {
        "type": "string",
        "description": "city name",
    }


def test_plain_functions_carry_no_definition() -> None:
    assert tool_definition(len) is None
    assert tool_definition(lambda: None) is None


@pytest.mark.parametrize("name", ["has space", "dash-ed", "", "x" * 65, "ünïcode"])
def test_bad_names_are_rejected_at_decoration(name: str) -> None:
    with pytest.raises(ToolNameError):

        @tool(name=name)
        def f() -> None: ...


def test_tool_name_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="must match"):
        tool(name="no good")(lambda: None)


def test_only_functions_can_be_decorated() -> None:
    with pytest.raises(TypeError, match="functions and methods"):
        tool(int)


@pytest.mark.parametrize(
    ("fn", "arguments", "expected"),
    [
        (add, '{"a": 2, "b": 3}', ToolResult.success("5", structured_output=5)),
        (add, '{"a": "2", "b": 3}', ToolResult.success("5", structured_output=5)),  # lax JSON
        (
            add,
            '{"a": 2, "b": null}',
            ToolResult.failure("Invalid arguments for 'add': b: Input should be a valid integer"),
        ),
        (
            add,
            '{"a": 2}',
            ToolResult.failure("Invalid arguments for 'add': b: Field required"),
        ),
        (get_weather, '{"city": "Oslo"}', ToolResult.success("12 degrees celsius in Oslo")),
        (log_event, '{"event": "x"}', ToolResult.success("Success")),
        (
            forecast,
            '{"city": "Oslo"}',
            ToolResult.success(
                '{"city":"Oslo","high":20}', structured_output=Forecast(city="Oslo", high=20)
            ),
        ),
        (
            reading,
            "{}",
            ToolResult.success(
                '{"station": "blindern", "value": 3.5}',
                structured_output=Reading("blindern", 3.5),
            ),
        ),
        (fail_on_purpose, "", ToolResult.failure("service down")),
    ],
)
def test_calls_and_return_values(fn: object, arguments: str, expected: ToolResult) -> None:
    assert _run(fn, arguments) == expected


def test_exceptions_become_failures() -> None:
    @tool
    def explode(x: int) -> int:
        return 1 // x

    assert _run(explode, '{"x": 0}') == ToolResult.failure(
        "ZeroDivisionError: integer division or modulo by zero"
    )


def test_metrics_are_shared_by_every_binding_of_a_definition() -> None:
    @tool
    def ping() -> str:
        return "pong"

    _run(ping, "{}")
    _run(ping, "{}")
    definition = tool_definition(ping)
    assert definition is not None and definition.metrics.calls == 2


def test_methods_are_marked_and_stay_methods() -> None:
    class Calculator:
        def __init__(self, factor: int) -> None:
            self.factor = factor

        @tool
        def scale(self, x: int) -> int:
            """Scale x by the calculator's factor."""
            return x * self.factor

    assert Calculator(3).scale(2) == 6
    definition = tool_definition(Calculator(3).scale)  # reached through the bound method
    assert definition is not None and definition.is_method
    assert list(definition.schema.parameters["properties"]) == ["x"]


# -- approval for decorated functions -------------------------------------------------------


class Script:
    def __init__(self, *decisions: object) -> None:
        self.decisions = list(decisions)
        self.requests: list[ReviewRequest] = []

    def review(self, request: ReviewRequest) -> object:
        self.requests.append(request)
        return self.decisions.pop(0)


transfers: list[tuple[str, int]] = []


@tool(requires_approval=True)
def transfer(to: str, amount: int) -> str:
    """Transfer money."""
    transfers.append((to, amount))
    return f"sent {amount} to {to}"


@tool(requires_approval=lambda arguments: '"amount": 1000' in arguments)
def small_transfer(to: str, amount: int) -> str:
    """Transfer money; only big amounts need approval."""
    return f"sent {amount} to {to}"


def _reviewed(fn: object, arguments: str, *decisions: object) -> tuple[ToolResult, Script]:
    handler = Script(*decisions)
    definition = tool_definition(fn)
    assert definition is not None
    with use_tool_context(ToolContext(review_handler=handler)):
        result = FunctionTool(definition, definition.function).execute(arguments)
    return result, handler


@pytest.fixture(autouse=True)
def _no_transfers() -> None:
    transfers.clear()


def test_the_reviewer_sees_the_json_arguments() -> None:
    result, handler = _reviewed(transfer, '{"to": "ann", "amount": 5}', Continue())
    assert result.output == "sent 5 to ann"
    assert [(r.tool_name, r.output) for r in handler.requests] == [
        ("transfer", '{"to": "ann", "amount": 5}')
    ]


def test_an_edit_is_validated_again_as_json_arguments() -> None:
    result, _ = _reviewed(
        transfer, '{"to": "ann", "amount": 500}', Edit('{"to": "ann", "amount": 50}')
    )
    assert result.output == "sent 50 to ann"
    assert transfers == [("ann", 50)]

    result, _ = _reviewed(transfer, '{"to": "ann", "amount": 500}', Edit('{"to": "ann"}'))
    assert result == ToolResult.failure(
        "The reviewer's edited input is invalid, so the tool did not run: "
        "Invalid arguments for 'transfer': amount: Field required"
    )
    assert transfers == [("ann", 50)]


def test_a_rejection_never_runs_the_function() -> None:
    result, _ = _reviewed(transfer, '{"to": "eve", "amount": 9}', ExitEarly("suspicious"))
    assert result == ToolResult.failure("Rejected by reviewer: suspicious")
    assert transfers == []


def test_invalid_arguments_fail_before_anyone_is_asked() -> None:
    result, handler = _reviewed(transfer, '{"to": "ann"}')
    assert result.is_success is False
    assert handler.requests == []


def test_conditional_approval_gets_the_arguments_text() -> None:
    result, handler = _reviewed(small_transfer, '{"to": "ann", "amount": 5}')
    assert result.output == "sent 5 to ann" and handler.requests == []
    result, handler = _reviewed(small_transfer, '{"to": "ann", "amount": 1000}', ExitEarly())
    assert result == ToolResult.failure("Rejected by reviewer: no reason given")
