"""An ensemble whose steps are loops, graphs and nested ensembles can be served: the MCP tool
and the A2A card describe every step (they read a task's fields from each step and failed with
AttributeError), a call runs it, and a run ending in a loop returns text (which task answers
last is decided as it runs, so no structured result is promised)."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from agentensemble import Agent, Edge, Ensemble, Graph, Loop, Task
from agentensemble.serve import mcp_server
from agentensemble.serve._shape import description, output_schema
from agentensemble.serve.a2a_serving import agent_card
from agentensemble.testing import FunctionChatModel

pytestmark = pytest.mark.anyio

WAIT = 20.0  # seconds: every call is bounded


def answer(messages: list[dict[str, Any]], tools: Any) -> str:
    """Names the task it was asked (the latest step's task is checked first: later prompts
    carry earlier answers as context)."""
    asked = messages[-1]["content"]
    for task in ("Polish the draft", "Review the plan", "Triage tides", "Plan tides"):
        if task in asked:
            return f"answered: {task}"
    return "answered: ?"


def crew() -> Ensemble:
    llm = FunctionChatModel(answer)
    writer = Agent(role="Writer", goal="Write about {topic}", llm=llm)
    plan = Task(name="plan", description="Plan {topic}", expected_output="A plan", agent=writer)
    route = Graph(
        name="route",
        start="triage",
        states={"triage": Task(description="Triage {topic}", expected_output="A team")},
        edges=[Edge("triage", Graph.END)],
    )
    inner = Ensemble(
        name="review",
        tasks=[Task(description="Review the plan", expected_output="Notes", agent=writer)],
    )
    polish = Loop(
        name="polish",
        body=[Task(description="Polish the draft", expected_output="A draft", agent=writer)],
        until=lambda state: state.iteration >= 2,
        max_iterations=3,
    )
    return Ensemble(tasks=[plan, route, inner, polish], llm=llm)


def test_the_description_names_each_step_and_the_tasks_inside() -> None:
    text = description(crew())
    assert text.splitlines()[1:] == [
        "1. Plan {topic} (Writer)",
        "2. graph 'route': Triage {topic}",
        "3. ensemble 'review': Review the plan",
        "4. loop 'polish': Polish the draft",
        "Returns: the last answer of loop 'polish'",
    ]
    assert output_schema(crew()) is None


def test_the_a2a_card_has_a_skill_per_step() -> None:
    card = agent_card(crew(), name="writer", description="Writes", url="http://127.0.0.1:9/")
    assert [(skill.id, skill.name) for skill in card.skills] == [
        ("plan", "plan"),
        ("route", "route"),
        ("review", "review"),
        ("polish", "polish"),
    ]
    assert card.skills[3].description == "loop 'polish': Polish the draft"


async def test_mcp_serves_and_runs_a_crew_of_steps() -> None:
    server = mcp_server({"writer": crew})
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            (listed,) = (await client.list_tools()).tools
            result = await client.call_tool("writer", {"topic": "tides"})
    assert listed.input_schema["required"] == ["topic"]
    assert "loop 'polish'" in (listed.description or "")
    assert not result.is_error, result.content
    assert result.content == [types.TextContent(text="answered: Polish the draft")]
