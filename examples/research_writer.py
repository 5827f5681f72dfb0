"""Two agents, two tasks: a researcher gathers notes with a tool, a writer turns them into prose.

Run it with ``make demo``. With no API key it runs offline on a scripted model (and says so);
with ``OPENAI_API_KEY`` set it uses ``openai/gpt-4o-mini``, and ``AGENTENSEMBLE_MODEL`` names any
litellm model (``anthropic/claude-3-5-haiku-latest``, ``ollama/llama3.1``, ...).
"""

from __future__ import annotations

import sys

from _model_choice import choose_model

from agentensemble import Agent, ChatModel, Ensemble, Task, tool
from agentensemble.testing import ScriptedChatModel, text, tool_call

NOTES = {
    "tool": "Tools let an agent act: each call is validated, run, and its result sent back.",
    "review": "A human reviewer can approve, edit or stop an agent's work at set moments.",
    "pipeline": "A tool pipeline runs several tools in one model call, with no round trips.",
}


@tool
def search_notes(query: str) -> str:
    """Search the team's notes.

    Args:
        query: words to look for, e.g. "review"
    """
    hits = [note for key, note in NOTES.items() if key in query.lower()]
    return "\n".join(hits) or "No notes found."


def offline_model(topic: str) -> ChatModel:
    """The scripted offline model: the turns a real model would take."""
    return ScriptedChatModel(
        [
            tool_call("search_notes", {"query": f"{topic} tool review"}),
            text(f"- {NOTES['tool']}\n- {NOTES['review']}"),
            text(
                f"On {topic}: agents act through tools, whose every call is validated and "
                "answered, while a human reviewer can approve, edit or stop the work when it "
                "matters."
            ),
        ]
    )


def build(topic: str, model: str | ChatModel) -> Ensemble:
    researcher = Agent(
        role="Researcher",
        goal="Collect accurate notes about {topic}",
        tools=[search_notes],
    )
    writer = Agent(role="Writer", goal="Explain {topic} in plain words", background="Be brief.")
    research = Task(
        description="Gather the key facts about {topic} from the team's notes.",
        expected_output="A bullet list of facts",
        agent=researcher,
    )
    write = Task(
        description="Write one paragraph about {topic} for a newcomer.",
        expected_output="One paragraph",
        agent=writer,
        context=[research],
    )
    return Ensemble(tasks=[research, write], llm=model)


def main() -> int:
    topic = sys.argv[1] if len(sys.argv) > 1 else "agent frameworks"
    model, banner = choose_model(offline_model(topic))
    print(banner)
    result = build(topic, model).run(inputs={"topic": topic})
    for index, output in enumerate(result.task_outputs, start=1):
        calls = len(output.tool_calls)
        plural = "" if calls == 1 else "s"
        print(f"\n== Task {index}: {output.agent_role} ({calls} tool call{plural})")
        print(output.raw)
    print(f"\nTokens used: {result.usage.total_tokens}; exit: {result.exit_reason.value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
