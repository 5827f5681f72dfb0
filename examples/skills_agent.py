"""An agent with a skill: a SKILL.md folder (examples/skills/expense-policy) it loads when the
task needs it.

The prompt lists only the skill's name and description; the agent reads the instructions with
``load_skill`` and the limits with ``read_skill_file``, both confined to the skill's folder.
With no API key it runs offline on a model that follows the skill (and says so); with
``OPENAI_API_KEY`` set it uses ``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any
litellm model. See docs/skills.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from _model_choice import choose_model

from agentensemble import Agent, ChatModel, ChatResponse, Ensemble, Skill, Task
from agentensemble.testing import FunctionChatModel, tool_call

SKILL = Path(__file__).with_name("skills") / "expense-policy"
CLAIM = {"Dinner": ("Meals", 62), "Hotel": ("Hotel", 130), "Taxi": ("Taxi", 35)}


def offline_model() -> ChatModel:
    """Does what the skill says: loads it, reads the limits it names, checks each item."""

    def answer(messages: list[dict[str, Any]], tools: Any) -> ChatResponse | str:
        last = str(messages[-1].get("content") or "")
        if messages[-1]["role"] != "tool":
            return tool_call("load_skill", {"name": "expense-policy"})
        if "references/limits.md" in last and "Travel expense limits" not in last:
            path = "references/limits.md"
            return tool_call("read_skill_file", {"name": "expense-policy", "path": path})
        limits = {k: int(v) for k, v in re.findall(r"- (\w+): up to (\d+) EUR", last)}
        lines, total = [], 0
        for item, (rule, amount) in CLAIM.items():
            limit = limits.get(rule)
            allowed = amount if limit is None else min(amount, limit)
            total += allowed
            verdict = "OK" if allowed == amount else f"OVER by {amount - allowed} EUR"
            shown = "in full with a receipt" if limit is None else f"up to {limit} EUR"
            lines.append(f"{item} {amount} EUR: {verdict} ({rule.lower()} {shown})")
        return "\n".join([*lines, f"Reimbursable: {total} EUR"])

    return FunctionChatModel(answer)


def main() -> int:
    model, banner = choose_model(offline_model())
    print(banner)
    skill = Skill.from_folder(SKILL)
    print(f"Skill: {skill.name}: {skill.description}")
    clerk = Agent(
        role="Expense clerk",
        goal="Check expense claims against the company's policy",
        llm=model,
        skills=[skill],
    )
    claim = ", ".join(f"{item} {amount} EUR" for item, (_, amount) in CLAIM.items())
    task = Task(
        description=f"May this one-day claim be reimbursed? {claim}.",
        expected_output="One line per item (OK or OVER), then the reimbursable total",
        agent=clerk,
    )
    result = Ensemble(tasks=[task]).run()
    for call in result.task_outputs[0].tool_calls:
        print(f"Tool call: {call.name}({call.arguments})")
    print(f"Answer:\n{result.raw}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
