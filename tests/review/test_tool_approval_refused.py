"""A review service that refuses an approval request for its size or content: the model's
problem. The call fails, the model is told why, the run goes on; nothing is approved. An auth
failure stays a review error that stops the run (fail closed)."""

from __future__ import annotations

import pytest
from _review_support import SECRET, adhoc_server, json_reply

from agentensemble import Agent, Ensemble, ExitReason, Task, TaskExecutionError, tool
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble_review import (
    HumanInputTool,
    ReviewProtocolError,
    ReviewServer,
    WebhookReviewHandler,
)
from agentensemble_review.server import MAX_BODY_BYTES

WRITTEN: list[int] = []


@tool(requires_approval=True)
def write_note(text: str) -> str:
    """Write a note.

    Args:
        text: what to write
    """
    WRITTEN.append(len(text))
    return "written"


def run(model: ScriptedChatModel, handler: WebhookReviewHandler) -> object:
    agent = Agent(role="Scribe", goal="Write notes", tools=[write_note], llm=model)
    return Ensemble(tasks=[Task(description="Note it", agent=agent)], review_handler=handler).run()


def test_a_tool_input_too_large_for_the_review_server_fails_only_that_call(
    review_server: ReviewServer,
) -> None:
    WRITTEN.clear()
    huge = "y" * (MAX_BODY_BYTES + 10)
    model = ScriptedChatModel([tool_call("write_note", {"text": huge}), "too long, gave up"])
    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, max_retries=0)
    result = run(model, handler)
    assert WRITTEN == []
    size = len(f'{{"text": "{huge}"}}')
    assert model.requests[1].tool_results == [
        "Error: the approval request was refused by the review service: "
        f"the tool input is too large ({size} bytes)"
    ]
    assert result.exit_reason is ExitReason.COMPLETED  # type: ignore[attr-defined]
    assert result.raw == "too long, gave up"  # type: ignore[attr-defined]


@pytest.mark.parametrize("status", [401, 403])
def test_an_auth_failure_still_stops_the_run(status: int) -> None:
    WRITTEN.clear()
    model = ScriptedChatModel([tool_call("write_note", {"text": "hi"}), "never"])
    refusing = adhoc_server(lambda seen: json_reply(status, {"error": "who are you"}))
    with refusing as (url, _), pytest.raises(TaskExecutionError) as info:
        run(model, WebhookReviewHandler(url, max_retries=0))
    assert isinstance(info.value.__cause__, ReviewProtocolError)
    assert WRITTEN == []
    assert len(model.requests) == 1


def test_a_question_too_large_for_the_review_server_fails_only_that_call(
    review_server: ReviewServer,
) -> None:
    question = "why? " * (MAX_BODY_BYTES // 5 + 10)
    tool = HumanInputTool()
    model = ScriptedChatModel([tool_call(tool.name, {"input": question}), "asked too much"])
    agent = Agent(role="Analyst", goal="Report", tools=[tool], llm=model)
    handler = WebhookReviewHandler(review_server.reviews_url, secret=SECRET, max_retries=0)
    result = Ensemble(tasks=[Task(description="Report", agent=agent)], review_handler=handler).run()
    size = len(question.strip().encode())
    assert model.requests[1].tool_results == [
        f"Error: the review service refused the question: the question is too large ({size} bytes)"
    ]
    assert result.exit_reason is ExitReason.COMPLETED
