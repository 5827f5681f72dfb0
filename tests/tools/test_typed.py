"""TypedAgentTool: the input is a pydantic model; its schema is the spec, arguments validated."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from agentensemble.errors import ConfigurationError
from agentensemble.tools import ToolContext, ToolResolver, ToolResult, TypedAgentTool


class Flight(BaseModel):
    """Where and when to fly."""

    origin: str = Field(description="IATA code, e.g. OSL")
    destination: str
    cabin: Literal["economy", "business"] = "economy"


class BookFlight(TypedAgentTool[Flight]):
    name = "book_flight"
    description = "Book a flight"

    def do_execute(self, input: Flight) -> ToolResult:
        return ToolResult.success(
            f"booked {input.origin}->{input.destination} ({input.cabin})",
            structured_output=input,
        )


class AsyncBookFlight(TypedAgentTool[Flight]):
    name = "async_book_flight"
    description = "Book a flight, asynchronously"

    async def ado_execute(self, input: Flight) -> str:
        return f"{input.origin}->{input.destination}"


FLIGHT_SCHEMA = {
    "description": "Where and when to fly.",
    "type": "object",
    "properties": {
        "origin": {"type": "string", "description": "IATA code, e.g. OSL"},
        "destination": {"type": "string"},
        "cabin": {"type": "string", "enum": ["economy", "business"], "default": "economy"},
    },
    "required": ["origin", "destination"],
}


def test_input_model_is_inferred_from_the_generic_parameter() -> None:
    assert BookFlight.input_model is Flight


def test_input_model_may_be_set_explicitly() -> None:
    class Explicit(TypedAgentTool[Flight]):
        name = "explicit"
        description = "Explicit input model"
        input_model = Flight

        def do_execute(self, input: Flight) -> str:
            return input.origin

    assert Explicit().parameters_schema() == FLIGHT_SCHEMA


def test_spec_parameters_are_the_model_schema() -> None:
    (spec,) = ToolResolver().resolve([BookFlight()]).specs
    assert spec == {
        "type": "function",
        "function": {
            "name": "book_flight",
            "description": "Book a flight",
            "parameters": FLIGHT_SCHEMA,
        },
    }


@pytest.mark.anyio
@pytest.mark.usefixtures("tool_context")
async def test_arguments_are_validated_into_the_model() -> None:
    result = await BookFlight().aexecute('{"origin": "OSL", "destination": "CDG"}')
    assert result.output == "booked OSL->CDG (economy)"
    assert result.structured_output == Flight(origin="OSL", destination="CDG")
    assert (await AsyncBookFlight().aexecute('{"origin": "A", "destination": "B"}')).output == (
        "A->B"
    )


@pytest.mark.anyio
async def test_bad_arguments_are_a_failure_naming_the_fields(tool_context: ToolContext) -> None:
    tool = BookFlight()
    result = await tool.aexecute('{"origin": "OSL", "cabin": "first"}')
    assert result == ToolResult.failure(
        "Invalid arguments for 'book_flight': destination: Field required; "
        "cabin: Input should be 'economy' or 'business'"
    )
    assert tool.metrics.failures == 1
    assert tool_context.metrics["book_flight"].failures == 1


@pytest.mark.usefixtures("tool_context")
def test_as_a_pipeline_step_the_string_input_is_parsed_as_json() -> None:
    # A pipeline passes the previous step's output text to execute().
    assert BookFlight().execute('{"origin": "BGO", "destination": "TRD"}').is_success
    not_json = BookFlight().execute("fly me to Paris")
    assert not_json.is_success is False
    assert (not_json.error_message or "").startswith(
        "Invalid arguments for 'book_flight': not valid JSON"
    )


def test_a_typed_tool_without_a_model_is_a_configuration_error() -> None:
    class Untyped(TypedAgentTool):  # type: ignore[type-arg]
        name = "untyped"
        description = "Forgot the model"

        def do_execute(self, input: BaseModel) -> str:
            return ""

    with pytest.raises(ConfigurationError, match="has no input_model"):
        ToolResolver().resolve([Untyped()])
