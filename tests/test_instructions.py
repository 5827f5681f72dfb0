"""Instructions computed at run time: ``Agent(instructions=...)``, text or a function of the run
context (sync or async), called at each task start and placed after the static system prompt."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import Agent, Ensemble, Task
from agentensemble.config import load_crew
from agentensemble.errors import TaskExecutionError
from agentensemble.execution.prompts import build_system_prompt, with_instructions
from agentensemble.run_context import RunContext
from agentensemble.testing import ScriptedChatModel


@pytest.mark.parametrize(
    ("instructions", "expected"),
    [
        (None, "SYSTEM"),
        ("", "SYSTEM"),
        ("   ", "SYSTEM"),
        ("Answer in French.", "SYSTEM\n\n## Instructions\nAnswer in French."),
        ("  Be brief. \n", "SYSTEM\n\n## Instructions\nBe brief."),
    ],
)
def test_instructions_come_after_the_static_system_prompt(
    instructions: str | None, expected: str
) -> None:
    assert with_instructions("SYSTEM", instructions) == expected


def system_prompts(model: ScriptedChatModel) -> list[str]:
    return [str(request.messages[0]["content"]) for request in model.requests]


def test_text_instructions_are_filled_from_inputs_like_the_other_agent_fields() -> None:
    model = ScriptedChatModel(["ok"])
    agent = Agent(role="Writer", goal="Write", llm=model, instructions="Write for {reader}.")
    Ensemble(tasks=[Task(description="Write", agent=agent)]).run({"reader": "children"})
    static = build_system_prompt("Writer", "Write")
    assert system_prompts(model) == [f"{static}\n\n## Instructions\nWrite for children."]


def test_a_function_is_called_at_each_task_start_with_the_run_context() -> None:
    seen: list[RunContext] = []

    def instructions(context: RunContext) -> str:
        seen.append(context)
        return f"Task {len(seen)} of the day, for {context.inputs['reader']}."

    model = ScriptedChatModel(["one", "two"])
    agent = Agent(role="Writer", goal="Write", llm=model, instructions=instructions)
    tasks = [
        Task(description="First", agent=agent, name="first"),
        Task(description="Second", agent=agent),
    ]
    output = Ensemble(tasks=tasks).run({"reader": "adults"})
    assert [c.task_name for c in seen] == ["first", None]
    assert [c.task_description for c in seen] == ["First", "Second"]
    assert {c.run_id for c in seen} == {output.run_id}
    assert seen[0].session is None and seen[0].agent_role == "Writer"
    static = build_system_prompt("Writer", "Write")
    prompts = system_prompts(model)
    assert all(prompt.startswith(static) for prompt in prompts)  # a cached prefix stays put
    assert prompts[0].endswith("Task 1 of the day, for adults.")
    assert prompts[1].endswith("Task 2 of the day, for adults.")


def test_an_async_function_is_awaited() -> None:
    async def instructions(context: RunContext) -> str:
        return "Answer with one word."

    model = ScriptedChatModel(["ok"])
    agent = Agent(role="Writer", goal="Write", llm=model, instructions=instructions)
    Ensemble(tasks=[Task(description="Write", agent=agent)]).run()
    assert system_prompts(model)[0].endswith("## Instructions\nAnswer with one word.")


@pytest.mark.parametrize(
    ("instructions", "message"),
    [
        (lambda context: 42, "must return text; got int"),
        (lambda context: 1 / 0, "raised ZeroDivisionError"),
    ],
)
def test_a_function_that_fails_or_answers_no_text_fails_the_task_naming_the_agent(
    instructions: Any, message: str
) -> None:
    model = ScriptedChatModel(["never asked"])
    agent = Agent(role="Writer", goal="Write", llm=model, instructions=instructions)
    with pytest.raises(TaskExecutionError, match=message) as caught:
        Ensemble(tasks=[Task(description="Write", agent=agent)]).run()
    assert "Agent 'Writer'" in str(caught.value)
    assert model.requests == []


@pytest.mark.parametrize(
    ("instructions", "message"),
    [
        (3, "instructions must be text or a function"),
        (["be brief"], "instructions must be text or a function"),
        (RunContext, "instructions got the class RunContext"),
        (lambda: "no context", "a function taking one argument"),
        (lambda a, b: "two", "a function taking one argument"),
    ],
)
def test_bad_instructions_are_refused_when_the_agent_is_built(
    instructions: Any, message: str
) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        Agent(role="Writer", goal="Write", instructions=instructions)
    assert caught.value.errors()[0]["loc"] == ("instructions",)


def test_a_crew_file_takes_instructions_as_text_only() -> None:
    crew = {
        "model": "openai/gpt-4o-mini",
        "agents": {"writer": {"role": "Writer", "goal": "Write", "instructions": "Be brief."}},
        "tasks": [{"description": "Write", "agent": "writer"}],
    }
    assert load_crew(crew).agents[0].instructions == "Be brief."
    crew["agents"]["writer"]["instructions"] = {"call": "mymodule:fn"}  # type: ignore[index]
    with pytest.raises(Exception, match="instructions must be text"):
        load_crew(crew)


def test_the_run_context_names_the_session(tmp_path: Any) -> None:
    from agentensemble.memory import SQLiteMemory

    sessions: list[str | None] = []

    def instructions(context: RunContext) -> str:
        sessions.append(context.session)
        return "Remember the user."

    model = ScriptedChatModel(["hello", "again"])
    agent = Agent(role="Helper", goal="Help", llm=model, instructions=instructions)
    ensemble = Ensemble(
        tasks=[Task(description="Answer", agent=agent)],
        memory=SQLiteMemory(tmp_path / "memory.sqlite"),
    )
    ensemble.run(session="user-42")
    ensemble.run()
    assert sessions == ["user-42", None]
