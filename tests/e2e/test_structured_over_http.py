"""Typed output over real HTTP: a model litellm knows for native structured output gets the
schema as ``response_format``; any other gets it in the prompt, with correction turns as the
fallback. The local server counts the requests each route takes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from agentensemble import LLM, Agent, Ensemble, Task
from agentensemble.llm import RetryPolicy
from agentensemble.testing import OpenAICompatibleServer

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("model_lane")]


class Report(BaseModel):
    title: str
    score: int


def provider_like(body: dict[str, Any]) -> str:
    """A provider that honours a JSON schema when asked natively, and otherwise answers in prose
    first (as models do), then in JSON once corrected."""
    if body.get("response_format", {}).get("type") == "json_schema":
        return '{"title": "Typed", "score": 5}'
    corrected = any("could not be used" in str(m.get("content")) for m in body["messages"])
    return '{"title": "Typed", "score": 5}' if corrected else "The report is titled Typed."


def run_on(server: OpenAICompatibleServer, model: str) -> Any:
    llm = LLM(model, api_base=server.base_url, api_key="sk-test", retry_policy=RetryPolicy())
    agent = Agent(role="Analyst", goal="Report", llm=llm)
    task = Task(description="Write the report", agent=agent, output_type=Report)
    return Ensemble(tasks=[task]).run()


def test_native_structured_output_takes_one_request(openai_server: OpenAICompatibleServer) -> None:
    openai_server.set_responder(provider_like)
    output = run_on(openai_server, "openai/gpt-4o-mini")  # litellm: supports response schema

    assert output.parsed == Report(title="Typed", score=5)
    (request,) = openai_server.requests
    sent = request["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "Report"
    assert sent["json_schema"]["schema"]["required"] == ["title", "score"]
    assert "## Output Format" not in json.dumps(request["messages"])


def test_prompt_instructions_and_a_correction_turn_otherwise(
    openai_server: OpenAICompatibleServer,
) -> None:
    openai_server.set_responder(provider_like)
    output = run_on(openai_server, "openai/test-model")  # unknown to litellm: prompt route

    assert output.parsed == Report(title="Typed", score=5)
    first, second = openai_server.requests
    assert "response_format" not in first
    assert "## Output Format" in first["messages"][-1]["content"]
    assert "could not be used" in second["messages"][-1]["content"]
