"""Fallback chains and run budgets over real HTTP: two local servers, one that throttles (429)
or is down (503) and one that answers; both model lanes (litellm and the openai SDK)."""

from __future__ import annotations

from typing import Any

import pytest
from openai_server import Fault, OpenAIServer, TextReply, ToolCallsReply

from agentensemble import (
    LLM,
    Agent,
    Ensemble,
    FallbackModel,
    LLMCallCompleted,
    RetryPolicy,
    Task,
    TokenDelta,
    UsageLimitExceeded,
    UsageLimits,
    tool,
)
from agentensemble.errors import AllModelsFailedError, TaskExecutionError
from agentensemble.llm.cost import cost_usd

pytestmark = [pytest.mark.e2e]

QUICK = RetryPolicy(max_attempts=2, initial_backoff=0.0, jitter=0.0, max_retry_after=0.0)


@pytest.fixture
def second_server() -> Any:
    with OpenAIServer() as server:
        yield server
    assert server.errors == []


def throttling(status: int) -> Any:
    return lambda body: Fault.http(status, retry_after=0)


def chain(down: OpenAIServer, up: OpenAIServer) -> LLM:
    """gpt-4o on the server that fails, gpt-4o-mini (its own max_tokens) on the one that answers."""
    return LLM(
        "openai/gpt-4o",
        api_base=down.base_url,
        api_key="sk-e2e-primary",
        max_tokens=50,
        retry_policy=QUICK,
        fallbacks=[
            LLM(
                "openai/gpt-4o-mini",
                api_base=up.base_url,
                api_key="sk-e2e-backup",
                max_tokens=20,
                retry_policy=QUICK,
            )
        ],
    )


class Events:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.seen.append(event)


@pytest.mark.parametrize("status", [429, 503])
def test_the_backup_answers_a_turn_the_throttled_model_cannot(
    openai_server: OpenAIServer, second_server: OpenAIServer, model_lane: str, status: int
) -> None:
    openai_server.set_responder(throttling(status))
    second_server.set_responder(lambda body: TextReply("from the backup", usage=(100, 10)))
    events = Events()
    agent = Agent(role="Writer", goal="Write", llm=chain(openai_server, second_server))
    ensemble = Ensemble(tasks=[Task(description="Write a line", agent=agent)], listeners=[events])
    output = ensemble.run()

    assert output.raw == "from the backup"
    assert len(openai_server.requests) == 2  # its own retries first, then the fallback
    sent = second_server.requests
    assert len(sent) == 1
    assert sent[0]["messages"] == openai_server.requests[0]["messages"]  # the same turn
    assert openai_server.requests[0]["max_tokens"] == 50 and sent[0]["max_tokens"] == 20
    completed = [e for e in events.seen if isinstance(e, LLMCallCompleted)]
    assert [e.model for e in completed] == ["openai/gpt-4o-mini"]
    assert completed[0].attempts == 3
    assert output.trace is not None
    assert output.trace.tasks[0].model_turns[0].model == "openai/gpt-4o-mini"
    usage = output.task_outputs[0].usage
    assert output.cost_usd == pytest.approx(cost_usd(usage, "openai/gpt-4o-mini"))


def test_a_bad_request_is_not_hidden_by_a_fallback(
    openai_server: OpenAIServer, second_server: OpenAIServer
) -> None:
    openai_server.set_responder(lambda body: Fault.http(400, body='{"error": {"message": "no"}}'))
    second_server.set_responder(lambda body: TextReply("never"))
    agent = Agent(role="Writer", goal="Write", llm=chain(openai_server, second_server))
    with pytest.raises(TaskExecutionError, match="HTTP 400"):
        Ensemble(tasks=[Task(description="Write", agent=agent)]).run()
    assert second_server.requests == []


def test_when_both_servers_fail_the_error_lists_both(
    openai_server: OpenAIServer, second_server: OpenAIServer
) -> None:
    openai_server.set_responder(throttling(429))
    second_server.set_responder(throttling(503))
    model = FallbackModel(
        [
            LLM("openai/a", api_base=openai_server.base_url, api_key="sk-e2e", retry_policy=QUICK),
            LLM("openai/b", api_base=second_server.base_url, api_key="sk-e2e", retry_policy=QUICK),
        ]
    )
    agent = Agent(role="Writer", goal="Write", llm=model)
    with pytest.raises(TaskExecutionError) as caught:
        Ensemble(tasks=[Task(description="Write", agent=agent)]).run()
    failed = caught.value.__cause__
    assert isinstance(failed, AllModelsFailedError)
    assert [name for name, _ in failed.failures] == ["openai/a", "openai/b"]
    assert "HTTP 429" in str(failed) and "HTTP 503" in str(failed)


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return "value of " + key


def test_a_budget_stops_a_loop_of_tool_calls_before_the_request_that_would_pass_it(
    openai_server: OpenAIServer,
) -> None:
    openai_server.set_responder(lambda body: ToolCallsReply((("lookup", '{"key": "k"}'),)))
    llm = LLM("openai/gpt-4o-mini", api_base=openai_server.base_url, api_key="sk-e2e")
    agent = Agent(role="Looper", goal="Loop", tools=[lookup], llm=llm, max_iterations=100)
    first = Task(description="Warm up", agent=Agent(role="Quick", goal="Answer", llm=llm))
    second = Task(description="Look things up forever", agent=agent)
    openai_server.push(TextReply("warmed"))
    with pytest.raises(UsageLimitExceeded) as caught:
        Ensemble(tasks=[first, second]).run(limits=UsageLimits(model_calls=6, cost_usd=1.0))
    assert caught.value.limit == "model_calls"
    assert len(openai_server.requests) == 6  # never a seventh
    assert [o.raw for o in caught.value.completed_outputs] == ["warmed"]


@pytest.mark.anyio
@pytest.mark.usefixtures("model_lane")
async def test_a_stream_broken_midway_restarts_before_the_backup_streams(
    openai_server: OpenAIServer, second_server: OpenAIServer
) -> None:
    openai_server.push_fault(kind="stream_break", body="The answer is")
    second_server.push_text("The answer is 42")
    once = RetryPolicy(max_attempts=1)
    llm = LLM(
        "openai/gpt-4o",
        api_base=openai_server.base_url,
        api_key="sk-e2e-primary",
        retry_policy=once,
        fallbacks=[
            LLM(
                "openai/gpt-4o-mini",
                api_base=second_server.base_url,
                api_key="sk-e2e-backup",
                retry_policy=once,
            )
        ],
    )
    agent = Agent(role="Answerer", goal="Answer", llm=llm)
    ensemble = Ensemble(tasks=[Task(description="Answer", agent=agent, name="answer")])
    events = [event async for event in ensemble.astream()]

    kinds = [type(event).__name__ for event in events]
    restart = kinds.index("StreamRestarted")
    before = "".join(e.text for e in events[:restart] if isinstance(e, TokenDelta))
    after = "".join(e.text for e in events[restart:] if isinstance(e, TokenDelta))
    assert (before, after) == ("The answer is", "The answer is 42")
    assert events[restart].task_name == "answer"
    completed = [e for e in events if isinstance(e, LLMCallCompleted)]
    assert [e.model for e in completed] == ["openai/gpt-4o-mini"]
    assert events[-1].output.raw == "The answer is 42"
