"""A support desk as a Graph: triage, research, answer, and back to research when the answer
is thin. Edges are tried in order after each state; the first that matches wins.

``result.graphs`` records the way taken. With no API key it runs offline on a scripted model
(and says so); with ``OPENAI_API_KEY`` set it uses ``openai/gpt-4o-mini``;
``AGENTENSEMBLE_MODEL`` names any litellm model.
"""

from __future__ import annotations

import sys
from typing import Any

from _model_choice import choose_model

from agentensemble import Agent, ChatModel, Edge, Ensemble, Graph, GraphState, Task
from agentensemble.testing import FunctionChatModel

THIN = "NEED MORE"


def offline_model() -> ChatModel:
    """Answers thinly until it has been sent back to research once."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        prompt = str(messages[-1]["content"])
        task = prompt.split("## Task\n", 1)[1]
        if task.startswith("Classify"):
            return "billing"
        if task.startswith("Find"):
            revising = "Your previous answer" in prompt
            return (
                "Refunds go back to the card in 5 business days." if revising else "Refunds exist."
            )
        if "5 business days" in prompt:
            return "Your refund reaches your card within 5 business days."
        return f"{THIN}: how long do refunds take?"

    return FunctionChatModel(answer)


def thin(state: GraphState) -> bool:
    return state.output.raw.startswith(THIN)


def build(model: str | ChatModel) -> Ensemble:
    desk = Graph(
        name="support",
        start="triage",
        states={
            "triage": Task(
                description="Classify this question: {question}",
                agent=Agent(role="Triage", goal="Route questions"),
            ),
            "research": Task(
                description="Find the facts that answer: {question}",
                agent=Agent(role="Researcher", goal="Know the policies"),
            ),
            "answer": Task(
                description=(
                    f"Answer the customer: {{question}}. If the research is too thin, "
                    f"start with '{THIN}:' and say what is missing."
                ),
                agent=Agent(role="Agent", goal="Answer customers exactly"),
            ),
        },
        edges=[
            Edge("triage", "research"),
            Edge("research", "answer"),
            Edge("answer", "research", when=thin),
            Edge("answer", Graph.END),
        ],
        max_steps=8,
    )
    return Ensemble(tasks=[desk], llm=model)


def main() -> int:
    question = sys.argv[1] if len(sys.argv) > 1 else "When do I get my refund?"
    model, banner = choose_model(offline_model())
    print(banner)
    result = build(model).run(inputs={"question": question})
    graph = result.graphs["support"]
    print(f"Path: {' -> '.join(graph.path)} ({graph.stopped_by})")
    print(f"Answer: {result.raw}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
