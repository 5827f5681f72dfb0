"""Errors and warnings a newcomer understands: names from other frameworks get a hint, a task
that seems to need an earlier output but has no context is flagged once at run start, and a
tool without a description is named."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import (
    Agent,
    Ensemble,
    Loop,
    MissingContextWarning,
    Task,
    ToolDescriptionWarning,
    tool,
)
from agentensemble.hints import missing_context
from agentensemble.testing import ScriptedChatModel


@pytest.mark.parametrize(
    ("model", "keyword", "hint"),
    [
        (Agent, "backstory", "use background="),
        (Agent, "expected_output", "expected_output belongs on Task"),
        (Agent, "max_iter", "use max_iterations="),
        (Task, "output_pydantic", "use output_type="),
        (Task, "guardrail", "use output_guardrails="),
        (Task, "backstory", "backstory belongs on Agent"),
        (Ensemble, "process", "use workflow="),
        (Ensemble, "max_rpm", "rate_limit=RateLimit(requests_per_minute="),
        (Agent, "max_rpm", "rate_limit=RateLimit(requests_per_minute="),
        (Ensemble, "manager_agent", "manager_llm="),
        (Ensemble, "inputs", "ensemble.run(inputs="),
        # CrewAI habits on memory, knowledge and loops; settings of the model on the agent
        (Agent, "memory", "Task(..., memory=['scope'])"),
        (Agent, "knowledge_sources", "use knowledge=[Knowledge(paths="),
        (Ensemble, "knowledge_sources", "use knowledge=[Knowledge(paths="),
        (Loop, "max_iter", "use max_iterations="),
        (Agent, "api_base", "Agent(llm=LLM('openai/gpt-4o-mini', api_base=...))"),
        (Ensemble, "base_url", "Ensemble(llm=LLM('openai/gpt-4o-mini', base_url=...))"),
        (Task, "max_iterations", "max_iterations belongs on Agent"),
        (Task, "agent_role", "use agent=<the Agent object>"),
        # misspelt fields: the field that was meant
        (Task, "contxt", "did you mean context=...?"),
        (Task, "expected_ouput", "did you mean expected_output=...?"),
        (Agent, "backgrund", "did you mean background=...?"),
        (Loop, "max_iteration", "did you mean max_iterations=...?"),
    ],
)
def test_foreign_keywords_get_a_hint(model: Any, keyword: str, hint: str) -> None:
    base: dict[str, Any] = {
        Agent: {"role": "R", "goal": "G"},
        Task: {"description": "D"},
        Ensemble: {"tasks": [Task(description="D")]},
        Loop: {"name": "L", "body": [Task(description="D", name="d")]},
    }[model]
    with pytest.raises(ValidationError) as info:
        model(**base, **{keyword: "x"})
    message = str(info.value)
    assert f"{model.__name__} has no field {keyword!r}" in message
    assert hint in message


def test_unknown_names_without_a_hint_keep_pydantic_s_message() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Agent(role="R", goal="G", flavour="x")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("method", "hint"), [("kickoff", "use run(inputs="), ("kickoff_async", "use await arun(")]
)
def test_kickoff_points_to_run(method: str, hint: str) -> None:
    ensemble = Ensemble(tasks=[Task(description="D")])
    with pytest.raises(AttributeError) as info:
        getattr(ensemble, method)
    assert f"has no attribute '{method}': {hint}" in str(info.value)
    with pytest.raises(AttributeError, match="no_such_thing"):
        ensemble.no_such_thing  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        ([{"topic": "AI"}], "got a list of dicts: call run() once per dict"),
        (["topic", "AI"], "must be a dict of template variables"),
        ("topic=AI", "got str"),
    ],
)
def test_inputs_must_be_a_dict(inputs: Any, says: str) -> None:
    ensemble = Ensemble(tasks=[Task(description="About {topic}")], llm=ScriptedChatModel())
    with pytest.raises(TypeError) as info:
        ensemble.run(inputs=inputs)
    assert "inputs={'topic': 'AI'}" in str(info.value)
    assert says in str(info.value)


# -- the missing-context rule ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("second", "flagged"),
    [
        ("Write a post from the research above", True),
        ("Summarise the previous task's findings", True),
        ("Turn the earlier results into a table", True),
        ("Use the output of research to write a post", True),  # names task 'research'
        ("Write a poem about the sea", False),
        ("Write a post about {topic}", False),
    ],
)
def test_missing_context_rule(second: str, flagged: bool) -> None:
    first = Task(description="Research {topic}", name="research")
    tasks = [first, Task(description=second)]
    assert bool(missing_context(tasks)) is flagged
    assert missing_context([first, Task(description=second, context=[first])]) == []


def test_the_warning_comes_once_at_run_start_and_names_the_fix() -> None:
    model = ScriptedChatModel(["facts", "post"])
    research = Task(description="Research AI", name="research")
    write = Task(description="Write a post from the research above")
    with pytest.warns(MissingContextWarning, match=r"task 2 .* add context=\[research\]"):
        Ensemble(tasks=[research, write], llm=model).run()
    assert "facts" not in model.requests[1].last_user_content  # indeed starved


def test_the_warning_can_be_silenced() -> None:
    research = Task(description="Research AI")
    write = Task(description="Write a post from the research above")
    ensemble = Ensemble(tasks=[research, write], llm=ScriptedChatModel(["a", "b"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=MissingContextWarning)
        ensemble.run()


# -- tools without a description -------------------------------------------------------------


def test_a_tool_without_description_is_named_in_a_warning() -> None:
    @tool
    def reverse(text: str) -> str:
        return text[::-1]

    with pytest.warns(ToolDescriptionWarning, match="Tool 'reverse' .* has no description"):
        Agent(role="R", goal="G", tools=[reverse])


def test_a_described_tool_is_quiet() -> None:
    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Agent(role="R", goal="G", tools=[shout])


@pytest.mark.parametrize(
    ("first", "second", "fix"),
    [
        (
            Task(description="Research AI"),
            "Summarise the previous task's findings",
            "add that Task (task 1, 'Research AI') to context=[...]",
        ),
        (Task(description="Port it", name="c++"), "Review the c++ output", "add context=[c++]"),
    ],
)
def test_the_missing_context_hint_says_a_fix_that_fits_the_task(
    first: Task, second: str, fix: str
) -> None:
    [message] = missing_context([first, Task(description=second)])
    assert message.endswith(fix)
