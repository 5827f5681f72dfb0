"""A loop that never converges, stopped by a run budget before it spends more than allowed.

A researcher keeps looking things up and a critic never approves; ``UsageLimits`` stops the run
before the model call that would pass ``model_calls`` (or the tool call that would pass
``tool_calls``), and ``UsageLimitExceeded`` still holds every round finished so far. With no API
key it runs offline on a scripted model (and says so); with ``OPENAI_API_KEY`` set it uses
``openai/gpt-4o-mini``; ``AGENTENSEMBLE_MODEL`` names any litellm model.
"""

from __future__ import annotations

from typing import Any

from _model_choice import choose_model

from agentensemble import (
    Agent,
    ChatModel,
    Ensemble,
    Loop,
    Task,
    UsageLimitExceeded,
    UsageLimits,
    tool,
)
from agentensemble.testing import FunctionChatModel, tool_call


@tool
def search(query: str) -> str:
    """Search the notes for a query."""
    return f"3 notes mention {query!r}; none settles it."


def offline_model() -> ChatModel:
    """Searches once per round, then reports that the question is still open."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> Any:
        if tools and messages[-1]["role"] != "tool":
            return tool_call("search", {"query": "the origin of the word 'budget'"})
        return "Still not settled: the sources disagree. Another round is needed."

    return FunctionChatModel(answer)


def main() -> None:
    model, banner = choose_model(offline_model())
    print(banner)
    researcher = Agent(
        role="Researcher", goal="Settle where a word comes from", tools=[search], llm=model
    )
    loop = Loop(
        name="research",
        body=[Task(description="Find where the word 'budget' comes from.", agent=researcher)],
        until=lambda state: state.last is not None and state.last.raw.startswith("Settled:"),
        max_iterations=100,  # far more than anyone would pay for
    )
    limits = UsageLimits(model_calls=7, tool_calls=10)
    try:
        output = Ensemble(tasks=[loop]).run(limits=limits)
    except UsageLimitExceeded as stopped:
        print(f"Stopped by the budget: {stopped.limit} used {stopped.used} of {stopped.allowed}")
        print(f"Rounds finished before the stop: {len(stopped.completed_outputs)}")
        print(f"Last finished round said: {stopped.completed_outputs[-1].raw}")
        return
    print(f"Settled within the budget: {output.raw}")


if __name__ == "__main__":
    main()
