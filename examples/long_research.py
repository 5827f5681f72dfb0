"""A long tool-calling task kept inside the model's window, with tools that hang or fail.

A researcher reads one long archive page after another. ``ContextPolicy`` keeps every prompt
under ``max_prompt_tokens``: once the conversation is over it, old pages become one-line
placeholders (``keep_tool_results=2``) and the run finishes instead of failing on the provider's
context-length error. The archive's index hangs (``timeout=``: a failed call the model sees, the
run goes on) and the page server fails now and then (``retries=``), and at most two pages are
fetched at once (``max_concurrency=``). With no API key it runs offline on a scripted model (and
says so); with ``OPENAI_API_KEY`` set it uses ``openai/gpt-4o-mini``; ``AGENTENSEMBLE_MODEL``
names any litellm model.
"""

from __future__ import annotations

import asyncio
from typing import Any

from _model_choice import choose_model

from agentensemble import Agent, ChatModel, ContextCompacted, ContextPolicy, Ensemble, Task, tool
from agentensemble.testing import FunctionChatModel, tool_call

PAGES = 6
failures_left = {"page 2": 1}  # the page server drops this request once


@tool(timeout=0.5)
async def archive_index(topic: str) -> str:
    """List the archive's pages about a topic."""
    await asyncio.Event().wait()  # the index never answers: the timeout ends the call
    return "never"


@tool(retries=2, max_concurrency=2)
def read_page(page: int) -> str:
    """Read one page of the tide-gauge archive (pages 1 to 6)."""
    name = f"page {page}"
    if failures_left.get(name):
        failures_left[name] -= 1
        raise ConnectionError(f"the archive dropped the request for {name}")
    rows = "; ".join(f"{page}.{n}: high water 4.{n} m" for n in range(60))
    return f"{name} of {PAGES}: {rows}"


def offline_model() -> ChatModel:
    """Asks the index first, then reads the pages in order, then answers."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> Any:
        calls = [m for m in messages if m["role"] == "tool"]
        if not calls:
            return tool_call("archive_index", {"topic": "tides"})
        if len(calls) <= PAGES:
            return tool_call("read_page", {"page": len(calls)})
        return f"Read all {PAGES} pages: the highest water recorded is 4.59 m."

    return FunctionChatModel(answer)


class Compactions:
    def __init__(self) -> None:
        self.seen: list[ContextCompacted] = []

    def on_event(self, event: Any) -> None:
        if isinstance(event, ContextCompacted):
            self.seen.append(event)


def main() -> None:
    model, banner = choose_model(offline_model())
    print(banner)
    researcher = Agent(
        role="Researcher",
        goal="Find the highest water in the archive",
        tools=[archive_index, read_page],
        llm=model,
        context_policy=ContextPolicy(max_prompt_tokens=2500, keep_tool_results=2),
    )
    task = Task(
        description=f"Read pages 1 to {PAGES} of the tide-gauge archive, one at a time, and "
        "report the highest water recorded.",
        agent=researcher,
    )
    compactions = Compactions()
    output = Ensemble(tasks=[task], listeners=[compactions]).run()
    first = output.task_outputs[0].tool_calls[0]
    print(f"The index: {first.output}")
    print(f"Pages read: {sum(1 for c in output.task_outputs[0].tool_calls if c.is_success)}")
    for event in compactions.seen:
        print(
            f"Compacted: {event.tokens_before} -> {event.tokens_after} tokens "
            f"(window {event.limit}), {event.tool_results_elided} old tool results shortened"
        )
    print(f"Answer: {output.raw}")


if __name__ == "__main__":
    main()
