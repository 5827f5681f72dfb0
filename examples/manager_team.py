"""A manager that delegates: Workflow.HIERARCHICAL with a researcher and a writer.

The manager gets the task and a ``delegate_task`` tool naming its workers; it hands out the
work, then writes the final answer. Every delegation is recorded in ``task_outputs``. With no
API key it runs offline on a scripted model (and says so); with ``OPENAI_API_KEY`` set it uses
``openai/gpt-4o-mini``; ``AGENTENSEMBLE_MODEL`` names any litellm model.
"""

from __future__ import annotations

from typing import Any

from _model_choice import choose_model

from agentensemble import Agent, ChatModel, ChatResponse, Ensemble, Task, Workflow, tool
from agentensemble.testing import FunctionChatModel, tool_call

FACTS = {
    "tides": "Two high tides a day, about 12 h 25 min apart.",
    "moon": "The moon is the main driver.",
}


@tool
def lookup(topic: str) -> str:
    """Look a topic up in the team's notes.

    Args:
        topic: one word, e.g. "moon"
    """
    return FACTS.get(topic.lower().strip(), "No notes on that.")


def offline_model() -> ChatModel:
    """Plays every role from the conversation: the manager delegates twice, then sums up."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> ChatResponse | str:
        role = str(messages[0]["content"]).split(".", 1)[0].removeprefix("You are ")
        results = [str(m["content"]) for m in messages if m["role"] == "tool"]
        if role == "Manager":
            plan = [
                ("Researcher", "Look up the notes on tides and on the moon."),
                ("Writer", "Write two sentences on tides from: " + " ".join(results)),
            ]
            if len(results) < len(plan):
                who, what = plan[len(results)]
                return tool_call("delegate_task", {"agent_role": who, "instructions": what})
            return "Final answer: " + results[-1]
        if role == "Researcher" and len(results) < 2:
            return tool_call("lookup", {"topic": ["tides", "moon"][len(results)]})
        if role == "Researcher":
            return " ".join(results)
        return "Tides rise twice a day, about 12 h 25 min apart. The moon drives them."

    return FunctionChatModel(answer)


def build(model: str | ChatModel) -> Ensemble:
    researcher = Agent(role="Researcher", goal="Find the facts", tools=[lookup])
    writer = Agent(role="Writer", goal="Write clearly and briefly")
    task = Task(description="Explain the tides to a sailor.", expected_output="Two sentences")
    return Ensemble(
        tasks=[task], agents=[researcher, writer], workflow=Workflow.HIERARCHICAL, llm=model
    )


def main() -> int:
    model, banner = choose_model(offline_model())
    print(banner)
    result = build(model).run()
    for index, output in enumerate(result.task_outputs, start=1):
        print(f"\n== Delegation {index}: {output.agent_role}")
        print(output.raw)
    print(f"\n{result.raw}")
    print(f"\nDelegations: {len(result.task_outputs)}; exit: {result.exit_reason.value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
