"""Tool approval and HumanInputTool end to end: the model over a real local OpenAI-compatible
server (through litellm), the reviewer in-process or behind the reference webhook server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from openai_server import OpenAIServer

from agentensemble import LLM, Agent, Ensemble, EnsembleOutput, RetryPolicy, Task, tool
from agentensemble_review import (
    Edit,
    ExitEarly,
    HumanInputTool,
    ReviewDecision,
    ReviewServer,
    ScriptedReviewHandler,
    WebhookReviewHandler,
)

pytestmark = pytest.mark.e2e

FAST = RetryPolicy(max_attempts=2, initial_backoff=0.001, max_backoff=0.01, jitter=0)
SECRET = "e2e-review-secret"
SENT: list[tuple[str, int]] = []


@pytest.fixture(autouse=True)
def _clean() -> None:
    SENT.clear()


@tool(requires_approval=True)
def transfer(to: str, amount: int) -> str:
    """Send money."""
    SENT.append((to, amount))
    return f"sent {amount} to {to}"


def run(server: OpenAIServer, tools: list[Any], reviewer: object) -> EnsembleOutput:
    model = LLM(
        model="openai/test-model",
        api_base=server.base_url,
        api_key="sk-test",
        retry_policy=FAST,
        timeout=10.0,
    )
    agent = Agent(role="Clerk", goal="Pay the invoices", tools=tools, llm=model)
    return Ensemble(tasks=[Task(description="Pay ann", agent=agent)], review_handler=reviewer).run()


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_rejection_reaches_the_model_over_http_and_it_adapts(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_tool_calls([("transfer", {"to": "ann", "amount": 500})])
    openai_server.push_tool_calls([("transfer", {"to": "ann", "amount": 50})])
    openai_server.push_text("Paid ann 50 after the reviewer refused 500.")
    reviewer = ScriptedReviewHandler(
        [ExitEarly("over the limit"), Edit('{"to": "ann", "amount": 40}')]
    )

    result = run(openai_server, [transfer], reviewer)

    _, second, third = openai_server.requests
    assert tool_messages(second) == ["Error: Rejected by reviewer: over the limit"]
    assert tool_messages(third)[-1] == "sent 40 to ann"  # the reviewer's edit, validated again
    assert SENT == [("ann", 40)]
    assert result.raw == "Paid ann 50 after the reviewer refused 500."
    reviewer.assert_all_used()


@contextmanager
def deciding(
    server: ReviewServer, decisions: list[ReviewDecision]
) -> Iterator[list[dict[str, Any]]]:
    """Decide the next pending reviews on the reference server from a thread, in order."""
    seen: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def decide() -> None:
        try:
            for decision in decisions:
                pending = server.wait_for_pending(timeout=20)
                seen.append(pending)
                server.decide(pending["id"], decision)
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)

    thread = threading.Thread(target=decide, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        thread.join(timeout=30)
    assert not thread.is_alive(), "the deciding thread did not finish"
    assert errors == []


def test_approval_and_a_human_answer_through_the_webhook_server(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push_tool_calls([("ask_human", {"input": "How much does ann get?"})])
    openai_server.push_tool_calls([("transfer", {"to": "ann", "amount": 75})])
    openai_server.push_text("Paid ann 75, as the human said.")
    with ReviewServer(port=0, secret=SECRET) as review_server:
        handler = WebhookReviewHandler(
            review_server.reviews_url, secret=SECRET, poll_interval=0.05, max_poll_interval=0.2
        )
        asker = HumanInputTool(timeout=timedelta(seconds=30))
        with deciding(
            review_server, [Edit("75 euros"), Edit('{"to": "ann", "amount": 70}')]
        ) as seen:
            result = run(openai_server, [asker, transfer], handler)

    question, approval = seen
    assert (question["timing"], question["tool_name"], question["output"]) == (
        "during_execution",
        "ask_human",
        "How much does ann get?",
    )
    assert approval["tool_name"] == "transfer"
    assert json.loads(approval["output"]) == {"to": "ann", "amount": 75}
    _, second, third = openai_server.requests
    assert tool_messages(second) == ["75 euros"]
    assert tool_messages(third)[-1] == "sent 70 to ann"
    assert SENT == [("ann", 70)]
    assert result.raw == "Paid ann 75, as the human said."
