"""The execution trace of a run through litellm against the local server: prompts as sent over
the wire, retries counted, usage as the provider reported it, secrets kept out."""

from __future__ import annotations

import pytest
from openai_server import OpenAIServer

from agentensemble import LLM, Agent, Ensemble, RetryPolicy, Task, tool

pytestmark = pytest.mark.e2e

KEY = "sk-e2e-trace-secret-key"
FAST = RetryPolicy(max_attempts=3, initial_backoff=0.001, max_backoff=0.01, jitter=0)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_trace_over_http_records_the_wire_prompts_retries_and_tool_calls(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_fault(503)
    openai_server.push_tool_calls([("add", {"a": 2, "b": 3})], usage=(30, 6))
    openai_server.push_text("The sum is 5", usage=(45, 4))
    llm = LLM("openai/test-model", api_base=openai_server.base_url, api_key=KEY, retry_policy=FAST)
    agent = Agent(role="Calculator", goal="Add numbers", tools=[add], llm=llm)
    ensemble = Ensemble(tasks=[Task(description="Add 2 and 3", agent=agent)], capture="full")

    output = ensemble.run()

    trace = output.trace
    assert trace is not None
    (task,) = trace.tasks
    wire = openai_server.requests[-1]["messages"]
    assert task.system_prompt == wire[0]["content"] and task.user_prompt == wire[1]["content"]
    first, second = task.model_turns
    assert (first.attempts, second.attempts) == (2, 1)
    assert task.metrics.retries == 1
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (30, 6)
    assert first.cost_usd is None  # "test-model" has no price: unknown, never 0
    assert second.messages is not None
    assert [(m["role"], m.get("content")) for m in second.messages] == [
        (m["role"], m.get("content")) for m in wire
    ]
    (call,) = task.tool_calls
    assert (call.name, call.output, call.is_success) == ("add", "5", True)
    assert KEY not in trace.to_json()


def test_a_priced_model_over_http_reports_its_cost_from_the_local_table(
    openai_server: OpenAIServer,
) -> None:
    from agentensemble.llm.cost import cost_usd

    openai_server.push_text("Done", usage=(1000, 500))
    llm = LLM("openai/gpt-4o-mini", api_base=openai_server.base_url, api_key=KEY)
    ensemble = Ensemble(tasks=[Task(description="Do it", agent=Agent(role="A", goal="g", llm=llm))])

    output = ensemble.run()

    assert output.cost_usd is not None and output.cost_usd > 0
    assert (
        output.cost_usd == output.task_outputs[0].cost_usd == cost_usd(output.usage, "gpt-4o-mini")
    )
    assert (
        output.trace is not None
        and output.trace.tasks[0].model_turns[0].cost_usd == output.cost_usd
    )
