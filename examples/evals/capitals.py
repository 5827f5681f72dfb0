"""Evaluate an agent in Python: a dataset file, a baseline, a change that regresses, the diff.

A geographer agent answers "what is the capital of X?" with a lookup tool. The dataset
(``capitals.yaml``) checks the answer, that the tool was called with the right country, and
the tokens. Then a "faster" version that sometimes skips the tool is evaluated against the
baseline: the report lists what regressed, and an HTML report shows each run's trajectory.

Offline (no API key) both versions run on scripted models; with ``OPENAI_API_KEY`` set the
baseline uses ``openai/gpt-4o-mini`` (``AGENTENSEMBLE_MODEL`` names any litellm model).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/_model_choice.py

from _model_choice import choose_model

from agentensemble import Agent, ChatModel, Ensemble, Task, tool
from agentensemble.evals import Dataset, evaluate
from agentensemble.testing import FunctionChatModel, tool_call

HERE = Path(__file__).resolve().parent
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Australia": "Canberra", "Canada": "Ottawa"}
# what a model that answers from memory gets wrong
GUESSES = {"Australia": "Sydney", "Canada": "Toronto"}


@tool
def capital_of(country: str) -> str:
    """The capital city of a country, from the atlas.

    Args:
        country: the country's English name, e.g. "France"
    """
    return CAPITALS.get(country, "unknown")


def _country(messages: Sequence[Any]) -> str:
    prompt = next(str(m.get("content")) for m in messages if m.get("role") == "user")
    return prompt.split("capital of ", 1)[1].split("?", 1)[0]


def careful_model() -> ChatModel:
    """Looks the capital up, then answers with what the tool said."""

    def answer(messages: Sequence[Any], tools: Any) -> Any:
        if messages[-1].get("role") == "tool":
            return f"The capital is {messages[-1].get('content')}."
        return tool_call("capital_of", {"country": _country(messages)})

    return FunctionChatModel(answer)


def hasty_model() -> ChatModel:
    """The regression (a prompt that says "be quick"): skips the atlas when it feels sure."""
    careful = careful_model()

    async def answer(messages: Sequence[Any], tools: Any) -> Any:
        country = _country(messages)
        if country in GUESSES:
            return f"The capital is {GUESSES[country]}."
        return await careful.complete(messages, tools=tools)

    return FunctionChatModel(answer)


def geographer(llm: str | ChatModel) -> Ensemble:
    agent = Agent(role="Geographer", goal="Name capitals", tools=[capital_of], llm=llm)
    task = Task(
        name="answer",
        description="What is the capital of {country}? Use the atlas.",
        expected_output="One sentence: The capital is <city>.",
        agent=agent,
    )
    return Ensemble(tasks=[task])


def main() -> None:
    model, banner = choose_model(careful_model())
    print(banner)
    dataset = Dataset.from_file(HERE / "capitals.yaml")
    # a factory: every run gets a fresh ensemble (and a fresh scripted model)
    baseline = evaluate(
        lambda: geographer(careful_model() if not isinstance(model, str) else model),
        dataset,
        repeat=2,
    )
    print("== Baseline")
    baseline.print()

    regressed = evaluate(lambda: geographer(hasty_model()), dataset, repeat=2)
    print("\n== After the change")
    regressed.print(baseline=baseline)
    diff = regressed.compare(baseline)
    print(f"\nRegressions: {', '.join(diff.regressions)}")
    print(f"Safe to ship: {diff.ok}")

    page = Path(tempfile.mkdtemp(prefix="agentensemble-evals-")) / "report.html"
    regressed.save_html(page, baseline=baseline)
    print(f"HTML report: {page}")


if __name__ == "__main__":
    main()
