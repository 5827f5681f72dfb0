"""The prompt builders are pure: these tables pin the exact text agents receive."""

import pytest

from agentensemble import Agent, Ensemble, Task
from agentensemble.execution.prompts import (
    STANDARD_INSTRUCTIONS,
    ContextItem,
    build_system_prompt,
    build_user_prompt,
)
from agentensemble.task import DEFAULT_EXPECTED_OUTPUT
from agentensemble.testing import ScriptedChatModel


def test_system_prompt_minimal() -> None:
    """The user's words and four of ours: this text rides on every request of every turn."""
    prompt = build_system_prompt("Researcher", "Find facts")
    assert prompt == "You are Researcher.\nGoal: Find facts"


def test_system_prompt_with_background_and_format() -> None:
    prompt = build_system_prompt(
        "Writer", "Write well", background="You write for engineers.", response_format="Markdown"
    )
    assert prompt.startswith("You are Writer.\nYou write for engineers.\nGoal: Write well")
    assert prompt.endswith("## Response Format\nMarkdown")


@pytest.mark.parametrize(
    ("expected_output", "prompt"),
    [
        ("A result", "## Task\nDo it\n\n## Expected Output\nA result"),
        (None, "## Task\nDo it"),
        ("", "## Task\nDo it"),
        # the default sentence tells a model nothing: it is not sent
        (DEFAULT_EXPECTED_OUTPUT, "## Task\nDo it"),
    ],
)
def test_user_prompt_without_context(expected_output: str | None, prompt: str) -> None:
    assert build_user_prompt("Do it", expected_output) == prompt


def test_the_full_instruction_text_is_one_argument_away() -> None:
    """The paragraph every prompt used to carry, back for a team that wants it."""
    model = ScriptedChatModel(["done"])
    agent = Agent(role="Writer", goal="Write", llm=model, instructions=STANDARD_INSTRUCTIONS)
    Ensemble(agents=[agent], tasks=[Task(description="Write a line", agent=agent)]).run()
    system = model.requests[0].messages[0]["content"]
    assert system == f"You are Writer.\nGoal: Write\n\n## Instructions\n{STANDARD_INSTRUCTIONS}"


def test_user_prompt_with_context_comes_first() -> None:
    prompt = build_user_prompt(
        "Write the article",
        "An article",
        [ContextItem("Research AI", "Researcher", "Facts: A, B")],
    )
    assert prompt == (
        "## Context\n\n### Research AI (Researcher)\nFacts: A, B\n\n"
        "## Task\nWrite the article\n\n## Expected Output\nAn article"
    )


def test_user_prompt_with_output_instructions_last() -> None:
    prompt = build_user_prompt("T", "E", output_instructions="## Output Format\nJSON")
    assert prompt.endswith("## Expected Output\nE\n\n## Output Format\nJSON")


def test_each_context_item_is_its_own_section_for_redaction() -> None:
    """The trace redacts a long prompt section by section, cut at ``SECTION_BREAK``: each item
    must start one (so an earlier output is scanned once per run, not once per later task). The
    item renders once and the prompt is the same text as before (a join of the parts)."""
    from agentensemble.redaction import SECTION_BREAK

    items = [ContextItem(f"step {n}", "Writer", f"output {n}") for n in range(3)]
    prompt = build_user_prompt("T", "E", items)
    head, *sections = prompt.split(SECTION_BREAK)
    assert head == "## Context"
    assert sections[:2] == ["step 0 (Writer)\noutput 0", "step 1 (Writer)\noutput 1"]
    assert sections[2] == "step 2 (Writer)\noutput 2\n\n## Task\nT\n\n## Expected Output\nE"
    assert items[0].section is items[0].section  # rendered once
    assert items[0] == ContextItem("step 0", "Writer", "output 0")  # equality: the fields only
