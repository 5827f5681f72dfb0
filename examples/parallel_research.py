"""Three researchers at once, then a writer: a parallel task graph (Workflow.PARALLEL).

Each research task has no context, so all three start together; the writer's task lists them as
context, so it starts when the last one is done and sees all three answers. With no API key it
runs offline on a scripted model (and says so); with ``OPENAI_API_KEY`` set it uses
``openai/gpt-4o-mini``; ``AGENTENSEMBLE_MODEL`` names any litellm model.
"""

from __future__ import annotations

import sys
from typing import Any

from _model_choice import choose_model

from agentensemble import Agent, ChatModel, Ensemble, Task, Workflow
from agentensemble.testing import FunctionChatModel

ANGLES = {
    "history": "Tide tables were first printed in the 13th century, at London Bridge.",
    "physics": "The moon's gravity raises two bulges of water; Earth turns beneath them.",
    "ecology": "Tide pools shelter life that survives hours out of the sea twice a day.",
}


def offline_model() -> ChatModel:
    """Answers like a model would, from the task in the prompt (order-free, so it suits
    concurrent tasks)."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        prompt = str(messages[-1]["content"]).split("## Task\n", 1)[-1]
        for angle, fact in ANGLES.items():
            if f"the {angle} of" in prompt:
                return fact
        return (
            "Tides have been charted for eight centuries. The moon's pull raises the water "
            "as Earth turns. Tide pools show how life adapts to that twice-daily rhythm."
        )

    return FunctionChatModel(answer)


def build(topic: str, model: str | ChatModel) -> Ensemble:
    research = [
        Task(
            description=f"Find one key fact about the {angle} of {{topic}}.",
            expected_output="One sentence",
            agent=Agent(role=f"{angle.title()} researcher", goal=f"Know the {angle} of {{topic}}"),
            name=angle,
        )
        for angle in ANGLES
    ]
    write = Task(
        description="Write a three-sentence overview of {topic} from the research.",
        expected_output="Three sentences",
        agent=Agent(role="Writer", goal="Explain {topic} in plain words"),
        context=research,
        name="overview",
    )
    return Ensemble(
        tasks=[*research, write], workflow=Workflow.PARALLEL, max_concurrency=3, llm=model
    )


def main() -> int:
    topic = sys.argv[1] if len(sys.argv) > 1 else "tides"
    model, banner = choose_model(offline_model())
    print(banner)
    ensemble = build(topic, model)
    result = ensemble.run(inputs={"topic": topic})
    for task in ensemble.tasks:
        output = result.output_for(task)
        print(f"\n== {task.name} ({output.agent_role if output else 'not run'})")
        print(output.raw if output else "-")
    print(f"\nTasks: {len(result.task_outputs)}; exit: {result.exit_reason.value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
