"""Whole ensembles through litellm against the local OpenAI-compatible server (a real socket)."""

from __future__ import annotations

from typing import Any

import pytest
from openai_server import OpenAIServer

from agentensemble import LLM, Agent, Ensemble, LLMError, RetryPolicy, Task, TaskExecutionError

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("model_lane")]

FAST = RetryPolicy(max_attempts=4, initial_backoff=0.001, max_backoff=0.01, jitter=0)


def model_for(server: OpenAIServer) -> LLM:
    return LLM(
        model="openai/test-model",
        api_base=server.base_url,
        api_key="sk-e2e-secret-key",
        retry_policy=FAST,
        timeout=10.0,
    )


def two_tasks(server: OpenAIServer) -> Ensemble:
    llm = model_for(server)
    researcher = Agent(role="Researcher", goal="Find facts about {topic}", llm=llm)
    writer = Agent(role="Writer", goal="Write clearly", llm=llm)
    research = Task(description="Research {topic}", expected_output="Facts", agent=researcher)
    write = Task(
        description="Write about {topic}",
        expected_output="A paragraph",
        agent=writer,
        context=[research],
    )
    return Ensemble(tasks=[research, write])


def contents(request: dict[str, Any]) -> tuple[str, str]:
    system, user = request["messages"][0], request["messages"][-1]
    assert (system["role"], user["role"]) == ("system", "user")
    return system["content"], user["content"]


def test_two_task_ensemble_threads_context_over_http(openai_server: OpenAIServer) -> None:
    openai_server.push_text("Fact one. Fact two.", usage=(20, 5))
    openai_server.push_text("A paragraph built on both facts.", usage=(40, 8))

    result = two_tasks(openai_server).run(inputs={"topic": "solar power"})

    assert [o.raw for o in result.task_outputs] == [
        "Fact one. Fact two.",
        "A paragraph built on both facts.",
    ]
    first, second = openai_server.requests
    system, user = contents(first)
    assert system.startswith("You are Researcher.\nGoal: Find facts about solar power")
    assert user == "## Task\nResearch solar power\n\n## Expected Output\nFacts"
    system, user = contents(second)
    assert system.startswith("You are Writer.")
    assert user == (
        "## Context\n\n### Research solar power (Researcher)\n"
        "Fact one. Fact two.\n\n## Task\nWrite about solar power\n\n## Expected Output\nA paragraph"
    )
    assert first["model"] == "test-model"
    assert "tools" not in first
    assert result.usage.total_tokens == 73


@pytest.mark.parametrize("status", [429, 503])
def test_transient_errors_are_retried_and_the_run_completes(
    openai_server: OpenAIServer, status: int
) -> None:
    openai_server.push_fault(status, retry_after=0)
    openai_server.push_text("facts")
    openai_server.push_fault(status)
    openai_server.push_text("paragraph")

    result = two_tasks(openai_server).run(inputs={"topic": "x"})

    assert [o.raw for o in result.task_outputs] == ["facts", "paragraph"]
    assert len(openai_server.requests) == 4


def test_unauthorised_fails_fast_keeping_completed_outputs(openai_server: OpenAIServer) -> None:
    openai_server.push_text("facts")
    openai_server.push_fault(401, body='{"error": {"message": "bad key"}}')

    with pytest.raises(TaskExecutionError) as info:
        two_tasks(openai_server).run(inputs={"topic": "x"})

    assert [o.raw for o in info.value.completed_outputs] == ["facts"]
    assert isinstance(info.value.__cause__, LLMError)
    assert info.value.__cause__.status_code == 401
    assert len(openai_server.requests) == 2  # no retry of the 401
    assert "sk-e2e-secret-key" not in str(info.value)
