"""A writer and a typed critic go round a Loop until the critic approves (at most 4 rounds).

From the second round on, the writer sees its previous draft and the critic's remarks as
revision feedback. ``result.loops`` tells how many rounds ran and why the loop stopped. With no
API key it runs offline on a scripted model (and says so); with ``OPENAI_API_KEY`` set it uses
``openai/gpt-4o-mini``; ``AGENTENSEMBLE_MODEL`` names any litellm model.
"""

from __future__ import annotations

import sys
from typing import Any

from _model_choice import choose_model
from pydantic import BaseModel, Field

from agentensemble import (
    Agent,
    ChatModel,
    Ensemble,
    EnsembleEvent,
    Loop,
    LoopIterationCompleted,
    Task,
)
from agentensemble.testing import FunctionChatModel


class Verdict(BaseModel):
    """The critic's typed answer: the loop reads ``approved``."""

    approved: bool = Field(description="true when the haiku is ready to publish")
    remarks: str = Field(description="what to improve, or why it is good")


DRAFTS = [
    "Rain taps the window / the kettle hums / I wait",
    "Autumn rain taps glass / the kettle hums its low song / tea steeps, I wait",
]


def offline_model() -> ChatModel:
    """Writes a weak first draft, then a revised one once it sees the critic's remarks; the
    critic approves a haiku that names a season."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        prompt = str(messages[-1]["content"])
        if "Judge the haiku" in prompt:
            draft = prompt.split("## Task", 1)[0]
            if "Autumn" in draft:
                return Verdict(approved=True, remarks="Season word, clean 5-7-5.").model_dump_json()
            return Verdict(
                approved=False, remarks="No season word, and the lines are not 5-7-5."
            ).model_dump_json()
        return DRAFTS[1] if "Your previous answer" in prompt else DRAFTS[0]

    return FunctionChatModel(answer)


def build(model: str | ChatModel, listeners: list[Any]) -> Ensemble:
    write = Task(
        name="write",
        description="Write a haiku about {topic}.",
        expected_output="The haiku, three lines separated by ' / '",
        agent=Agent(role="Poet", goal="Write vivid, exact haiku"),
    )
    critique = Task(
        name="critique",
        description="Judge the haiku: does it name a season and keep to 5-7-5?",
        context=[write],
        output_type=Verdict,
        agent=Agent(role="Critic", goal="Hold haiku to the classic form"),
    )
    polish = Loop(
        name="polish",
        body=[write, critique],
        until=lambda state: state.outputs["critique"].parsed.approved,
        max_iterations=4,
    )
    return Ensemble(tasks=[polish], llm=model, listeners=listeners)


class Rounds:
    """Prints each round as it ends (the LoopIterationCompleted event)."""

    def on_event(self, event: EnsembleEvent) -> None:
        if isinstance(event, LoopIterationCompleted):
            verdict = event.outputs["critique"].parsed
            print(f"Round {event.iteration}: {event.outputs['write'].raw}")
            print(f"  critic: approved={verdict.approved}; {verdict.remarks}")


def main() -> int:
    topic = sys.argv[1] if len(sys.argv) > 1 else "rain"
    model, banner = choose_model(offline_model())
    print(banner)
    result = build(model, [Rounds()]).run(inputs={"topic": topic})
    loop = result.loops["polish"]
    print(f"\nRounds: {loop.iterations}; stopped by: {loop.stopped_by}")
    print(f"Final haiku: {loop.history[-1]['write'].raw}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
