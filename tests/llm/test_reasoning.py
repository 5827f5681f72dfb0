"""Reasoning a model shows: on the task's output and in the trace, redacted; streamed as
``ReasoningDelta``; never the context another task reads."""

from __future__ import annotations

from typing import Any

from agentensemble import Agent, ChatResponse, Ensemble, ReasoningDelta, Task
from agentensemble.redaction import register_secret
from agentensemble.testing import ScriptedChatModel

SECRET = "sk-reasoning-0123456789abcdef"


def thinking(content: str, reasoning: str) -> ChatResponse:
    return ChatResponse(content=content, reasoning=reasoning, finish_reason="stop")


def two_tasks() -> tuple[Ensemble, ScriptedChatModel]:
    register_secret(SECRET)
    first = ScriptedChatModel([thinking("Paris", f"The key {SECRET} says France.")])
    second = ScriptedChatModel([thinking("Done", "Nothing to add.")])
    research = Task(
        description="Find the capital", agent=Agent(role="Researcher", goal="Find", llm=first)
    )
    write = Task(
        description="Write it up",
        agent=Agent(role="Writer", goal="Write", llm=second),
        context=[research],
    )
    return Ensemble(tasks=[research, write]), second


def test_reasoning_is_on_the_output_and_the_trace_redacted_and_never_context() -> None:
    ensemble, writer_model = two_tasks()

    result = ensemble.run()

    first = result.task_outputs[0]
    assert first.raw == "Paris"
    assert first.reasoning == "The key *** says France."
    assert result.trace.tasks[0].model_turns[0].reasoning == "The key *** says France."
    writer_prompt = str(writer_model.requests[0].messages)
    assert "Paris" in writer_prompt
    assert "says France" not in writer_prompt  # reasoning is not another agent's context


def test_reasoning_streams_as_reasoning_deltas_redacted() -> None:
    ensemble, _ = two_tasks()

    async def collect() -> list[Any]:
        return [event async for event in ensemble.astream()]

    import anyio

    events = anyio.run(collect)

    pieces = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert "says France." in pieces and SECRET not in pieces
