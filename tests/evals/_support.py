"""Small offline ensembles for the evals tests: a geography agent with a lookup tool."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.testing import FunctionChatModel

CAPITALS = {"France": "Paris", "Germany": "Berlin", "Italy": "Rome"}


@tool
def capital_of(country: str) -> str:
    """The capital city of a country."""
    return CAPITALS.get(country, "unknown")


def geo_model(wrong: bool = False) -> FunctionChatModel:
    """Looks the capital up with the tool, then answers with it (or, ``wrong``, with Madrid)."""

    def answer(messages: Sequence[Any], tools: Any) -> Any:
        from agentensemble.testing import tool_call

        last = messages[-1]
        if last.get("role") == "tool":
            city = str(last.get("content"))
            return f"The capital is {'Madrid' if wrong else city}."
        prompt = str(last.get("content"))
        country = prompt.split("capital of ", 1)[1].split("?", 1)[0]
        return tool_call("capital_of", {"country": country})

    return FunctionChatModel(answer)


def geo_ensemble(wrong: bool = False) -> Ensemble:
    agent = Agent(role="Geographer", goal="Name capitals", tools=[capital_of], llm=geo_model(wrong))
    return Ensemble(
        tasks=[
            Task(
                name="answer",
                description="What is the capital of {country}?",
                expected_output="The capital city",
                agent=agent,
            )
        ]
    )


def arguments(text: str) -> Any:
    return json.loads(text)
