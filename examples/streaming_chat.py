"""A chat answer streamed token by token, then what the run did: its id, cost and trace.

``Ensemble.astream`` yields the run's events as they happen; ``TokenDelta`` events carry the
model's text as it is generated, which is what a chat UI shows. With no API key it runs offline
on a scripted model (which streams word by word); with ``OPENAI_API_KEY`` set it uses
``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any litellm model.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from _model_choice import choose_model

from agentensemble import (
    Agent,
    Ensemble,
    EnsembleCompleted,
    ExecutionTrace,
    StreamRestarted,
    Task,
    TokenDelta,
    ToolCallCompleted,
    tool,
)
from agentensemble.testing import ScriptedChatModel, text, tool_call

OPENING_HOURS = {"library": "9:00-18:00", "pool": "7:00-21:00", "museum": "10:00-17:00"}


@tool
def opening_hours(place: str) -> str:
    """Opening hours of a place in town.

    Args:
        place: one of library, pool, museum
    """
    return OPENING_HOURS.get(place.lower(), f"No opening hours known for {place!r}.")


def offline_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            tool_call("opening_hours", {"place": "pool"}),
            text("The pool opens at 7:00 and closes at 21:00, so an evening swim works."),
        ]
    )


async def chat(question: str) -> int:
    model, banner = choose_model(offline_model())
    print(banner)
    agent = Agent(role="Town guide", goal="Answer questions about the town", tools=[opening_hours])
    ensemble = Ensemble(tasks=[Task(description=question, agent=agent)], llm=model)

    print(f"You: {question}\nGuide: ", end="", flush=True)
    output = None
    async for event in ensemble.astream():
        if isinstance(event, TokenDelta):
            print(event.text, end="", flush=True)  # the answer as it is generated
        elif isinstance(event, StreamRestarted):
            print("\n[connection hiccup, starting the answer again]\nGuide: ", end="")
        elif isinstance(event, ToolCallCompleted):
            print(f"[looked up {event.record.name}] ", end="", flush=True)
        elif isinstance(event, EnsembleCompleted):
            output = event.output
    print()
    assert output is not None and output.trace is not None

    cost = "unknown (no price for this model)" if output.cost_usd is None else output.cost_usd
    print(f"Run id: {output.run_id}")
    print(f"Tokens: {output.usage.total_tokens}, cost in USD: {cost}")
    task = output.trace.tasks[0]
    slowest = max(task.tool_calls, key=lambda call: call.duration_seconds, default=None)
    if slowest is not None:
        print(f"Slowest tool: {slowest.name}({slowest.arguments}) -> {slowest.output}")
    with tempfile.TemporaryDirectory() as folder:
        saved = output.trace.save(Path(folder) / "trace.json")
        loaded = ExecutionTrace.from_json(saved.read_text(encoding="utf-8"))
        print(f"Trace saved and loaded back: {loaded == output.trace}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(chat("When can I go swimming tonight?")))
