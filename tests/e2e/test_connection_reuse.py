"""Consecutive ``run()`` calls share one event loop, so the HTTP client and its connection are
reused: counted at the server, not guessed from timings."""

from __future__ import annotations

import pytest
from openai_server import OpenAIServer

from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("model_lane")]


def test_five_consecutive_runs_reuse_one_connection(openai_server: OpenAIServer) -> None:
    llm = LLM(
        model="openai/test-model",
        api_base=openai_server.base_url,
        api_key="sk-e2e-secret-key",
        retry_policy=RetryPolicy(max_attempts=1),
        timeout=10.0,
    )
    ensemble = Ensemble(
        tasks=[Task(description="Answer", agent=Agent(role="A", goal="G", llm=llm))]
    )
    for n in range(5):
        openai_server.push_text(f"answer {n}")

    answers = [ensemble.run().raw for _ in range(5)]

    assert answers == [f"answer {n}" for n in range(5)]
    assert len(openai_server.requests) == 5
    assert openai_server.connections_opened == 1
