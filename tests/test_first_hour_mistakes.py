"""Mistakes a newcomer makes in the first hour, each caught with one clear message before any
model request (or, for a tool's bug at run time, shown to the developer where it happened)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import (
    LLM,
    Agent,
    ConfigurationError,
    Ensemble,
    MissingContextWarning,
    ModelSettingsError,
    Task,
    ToolDescriptionWarning,
    ToolExceptionWarning,
    Workflow,
    tool,
)
from agentensemble.config import load_crew
from agentensemble.testing import OpenAICompatibleServer, ScriptedChatModel, tool_call

HERE = Path(__file__).resolve()


def _agent(role: str = "Writer") -> Agent:
    return Agent(role=role, goal="Write")


# -- tasks without agent= beside agents=[...] (the CrewAI habit) -------------------------------


def test_tasks_without_an_agent_beside_unused_agents_are_refused_with_the_fix() -> None:
    researcher, writer = _agent("Researcher"), _agent("Writer")
    with pytest.raises(ValidationError) as caught:
        Ensemble(
            agents=[researcher, writer],
            tasks=[Task(description="Research AI"), Task(description="Write about AI")],
        )
    message = str(caught.value)
    assert caught.value.error_count() == 1
    assert "task 1 ('Research AI') has no agent" in message
    assert "'Researcher', 'Writer'" in message
    assert "Task(..., agent=researcher)" in message and "Workflow.HIERARCHICAL" in message


@pytest.mark.parametrize(
    "build",
    [
        # every listed agent does a task: a task without one is the documented synthesised agent
        lambda w: Ensemble(
            agents=[w], tasks=[Task(description="a", agent=w), Task(description="b")]
        ),
        # a manager hands the tasks out
        lambda w: Ensemble(
            agents=[w], tasks=[Task(description="a")], workflow=Workflow.HIERARCHICAL
        ),
        # a peer that delegating agents may ask
        lambda w: Ensemble(
            agents=[w],
            tasks=[
                Task(description="a", agent=Agent(role="Lead", goal="g", allow_delegation=True))
            ],
        ),
        # no agents listed at all
        lambda w: Ensemble(tasks=[Task(description="a")]),
    ],
    ids=["all-used", "hierarchical", "peer", "no-agents"],
)
def test_legitimate_shapes_are_still_accepted(build: Any) -> None:
    build(_agent())


def test_a_crew_file_gets_the_fix_in_its_own_words(tmp_path: Path) -> None:
    from agentensemble.config import ConfigFileError

    crew = tmp_path / "crew.yaml"
    crew.write_text(
        "agents:\n  writer: {role: Writer, goal: Write}\ntasks:\n  draft: {description: Draft}\n"
    )
    with pytest.raises(ConfigFileError) as caught:
        load_crew(crew)
    message = str(caught.value)
    assert "crew.yaml:4: tasks.draft" in message
    assert "`agent: writer`" in message and "`workflow: hierarchical`" in message
    assert "Task(" not in message and "Workflow." not in message


# -- one value where a setting takes a list ----------------------------------------------------

RESEARCH = Task(description="Research", name="research")


@pytest.mark.parametrize(
    ("build", "fix"),
    [
        (lambda: Task(description="Write", context=RESEARCH), "context=[research]"),
        (lambda: Task(description="Write", tools=print), "tools=[print]"),
        (lambda: Agent(role="R", goal="G", tools="search"), "tools=['search']"),
        (lambda: Ensemble(tasks=RESEARCH), "tasks=[research]"),
        (lambda: Ensemble(tasks=[RESEARCH], agents=_agent()), "agents=[Writer]"),
        (lambda: Task(description="W", output_guardrails=len), "output_guardrails=[len]"),
    ],
    ids=["task-context", "task-tools", "agent-tools", "ensemble-tasks", "agents", "guardrails"],
)
def test_one_value_for_a_list_setting_is_one_error_saying_how_to_write_it(
    build: Any, fix: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        build()
    assert caught.value.error_count() == 1
    assert "takes a list" in str(caught.value) and fix in str(caught.value)


# -- model settings in the wrong place ---------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: Agent(role="R", goal="G", temperature=0.2),
        lambda: Task(description="d", max_tokens=100),
        lambda: Ensemble(tasks=[RESEARCH], top_p=0.9),
    ],
    ids=["agent", "task", "ensemble"],
)
def test_a_model_setting_says_it_belongs_on_the_llm(build: Any) -> None:
    with pytest.raises(ValidationError, match=r"setting of the model.*LLM\('openai/gpt-4o-mini'"):
        build()


def test_a_crew_file_sets_the_temperature_on_its_model(tmp_path: Path) -> None:
    from agentensemble.config import ConfigFileError

    crew = tmp_path / "crew.yaml"
    crew.write_text(
        "agents:\n  writer:\n    role: Writer\n    goal: Write\n    temperature: 0.2\n"
        "tasks:\n  draft: {description: Draft, agent: writer}\n"
    )
    with pytest.raises(ConfigFileError, match=r"`llm: \{model: openai/gpt-4o-mini, temperature"):
        load_crew(crew)
    crew.write_text(
        "agents:\n  writer:\n    role: Writer\n    goal: Write\n"
        "    llm: {model: openai/gpt-4o, temperature: 0.2}\n"
        "tasks:\n  draft: {description: Draft, agent: writer}\n"
    )
    llm = load_crew(crew).tasks[0].agent.llm  # type: ignore[union-attr]
    assert isinstance(llm, LLM) and (llm.model, llm.temperature) == ("openai/gpt-4o", 0.2)


# -- a model name without a provider -----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("gpt4o", "'openai/gpt-4o'"), ("claude-3", "'anthropic/claude-"), ("llama3", "provider/")],
)
def test_a_model_name_without_a_provider_fails_before_any_request(
    name: str, suggestion: str
) -> None:
    with OpenAICompatibleServer(["never"]) as server:
        llm = LLM(name, api_base=server.base_url, api_key="sk-test")
        agent = Agent(role="R", goal="G", llm=llm)
        with pytest.raises(ModelSettingsError) as caught:
            Ensemble(tasks=[Task(description="d", agent=agent)]).run()
        assert server.requests == []
    assert f"model {name!r} names no provider" in str(caught.value)
    assert suggestion in str(caught.value)


@pytest.mark.parametrize("name", ["gpt-4o-mini", "openai/anything-local", "ollama/llama3"])
def test_names_litellm_routes_are_accepted(name: str) -> None:
    from agentensemble.llm._config_checks import model_name_problem, provider_problem

    assert model_name_problem(name, {}) is None
    assert provider_problem(name, {}) is None


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("acme/some-model", ""),
        ("opnai/gpt-4o", "did you mean 'openai'"),
        ("antropic/x", "'anthropic'"),
    ],
)
def test_a_provider_litellm_does_not_know_fails_before_any_request(
    name: str, suggestion: str
) -> None:
    with OpenAICompatibleServer(["never"]) as server:
        llm = LLM(name, api_base=server.base_url, api_key="sk-test")
        agent = Agent(role="R", goal="G", llm=llm)
        with pytest.raises(ConfigurationError) as caught:
            Ensemble(tasks=[Task(description="d", agent=agent)]).run()
        assert server.requests == []
    provider = name.split("/")[0]
    assert f"names the provider {provider!r}, which litellm does not know" in str(caught.value)
    assert suggestion in str(caught.value)


@pytest.mark.parametrize(
    "name", ["hosted_vllm/my-model", "lm_studio/qwen", "openrouter/x/y", "groq/llama"]
)
def test_providers_litellm_routes_without_prices_are_accepted(name: str) -> None:
    from agentensemble.llm._config_checks import provider_problem

    assert provider_problem(name, {}) is None


# -- a tool's exception: its type to the model, a warning at the tool's line to the developer --


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    orders = {"O-1": "shipped"}
    return orders[order_id]  # the line the warning points at


def test_a_tools_exception_reaches_the_model_with_its_type_and_the_developer_at_its_line() -> None:
    model = ScriptedChatModel([tool_call("lookup_order", {"order_id": "O-9"}), "sorry"])
    agent = Agent(role="Clerk", goal="Answer", tools=[lookup_order], llm=model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        output = Ensemble(tasks=[Task(description="Where is O-9?", agent=agent)]).run()
    assert output.task_outputs[0].tool_calls[0].is_success is False
    tool_messages = [m for m in model.requests[1].messages if m.get("role") == "tool"]
    assert tool_messages[-1]["content"] == "Error: KeyError: 'O-9'"
    found = [w for w in caught if issubclass(w.category, ToolExceptionWarning)]
    assert len(found) == 1
    assert Path(found[0].filename) == HERE
    assert "return orders[order_id]" in HERE.read_text().splitlines()[found[0].lineno - 1]
    assert "the call to tool 'lookup_order' raised KeyError: 'O-9'" in str(found[0].message)


# -- warnings point at the user's line ---------------------------------------------------------


def test_warnings_point_at_the_users_line_not_the_librarys() -> None:
    def undescribed(text: str) -> str:
        return text

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Agent(role="R", goal="G", tools=[tool(undescribed)])
        ensemble = Ensemble(
            tasks=[
                Task(description="Draft", name="draft"),
                Task(description="Use the previous task"),
            ],
            llm=ScriptedChatModel(["a", "b"]),
        )
        ensemble.run()
    kinds = {w.category: w for w in caught}
    for category in (ToolDescriptionWarning, MissingContextWarning):
        assert Path(kinds[category].filename) == HERE, category
