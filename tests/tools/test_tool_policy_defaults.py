"""Defaults for many tools: ``ToolPolicy`` on an agent and on an ensemble, below each tool's own
settings (setting by setting); and a third-party tool whose ``timeout`` means something else."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import Agent, AgentTool, Ensemble, Task, ToolPolicy, ToolResult, tool
from agentensemble.config import ConfigFileError, load_crew
from agentensemble.errors import ConfigurationError
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble.tools import _calls
from agentensemble.tools._calls import CallPolicy
from agentensemble.tools.resolver import ToolResolver


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_calls, "RETRY_BACKOFF", 0.0)


# -- the policy object ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"timeout": 0}, "timeout must be a number of seconds more than 0"),
        ({"timeout": "30"}, "timeout must be a number of seconds"),
        ({"timeout": float("nan")}, "timeout must be"),
        ({"retries": -1}, "retries must be a whole number"),
        ({"retries": True}, "retries must be a whole number"),
        ({"max_concurrency": 0}, "max_concurrency must be a whole number, 1 or more"),
        ({"timout": 5}, "timout"),  # a misspelt setting is named, not ignored
    ],
)
def test_a_policy_that_cannot_work_is_refused_naming_the_setting(
    settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValidationError, match=named):
        ToolPolicy(**settings)
    with pytest.raises(ValidationError, match=named):
        Agent(role="R", goal="G", tool_policy=settings)


# -- precedence -------------------------------------------------------------------------------


@tool(timeout=5)
def own_timeout(query: str) -> str:
    """Sets its own timeout."""
    return query


@tool(retries=0)
def never_again(query: str) -> str:
    """Must never run twice: says so with retries=0."""
    return query


@tool(requires_approval=True)
def gated(query: str) -> str:
    """Asks a reviewer first."""
    return query


class Fetch(AgentTool):
    name = "fetch"
    description = "Keeps its own deadline, as HttpFetch does."
    own_deadline = True
    timeout = 3.0

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input)


class Delegate(AgentTool):
    name = "delegate"
    description = "A worker's whole task (makes its own steps)."
    durable_itself = True

    def execute(self, input: str) -> ToolResult:
        return ToolResult.success(input)


AGENT = ToolPolicy(timeout=1, retries=2)
ENSEMBLE = ToolPolicy(timeout=9, retries=3, max_concurrency=4)


@pytest.mark.parametrize(
    ("tool_", "expected"),
    [
        (own_timeout, CallPolicy("own_timeout", 5, 2, 4)),  # its own timeout, the rest below
        (never_again, CallPolicy("never_again", 1, 0, 4)),  # its explicit 0 wins
        (gated, CallPolicy("gated", 1, 2, 4, gated=True)),  # retries never run a gated body
        (Fetch(), CallPolicy("fetch", 3 + _calls.OWN_DEADLINE_GRACE, 2, 4)),  # no default timeout
        (Delegate(), None),  # a delegation is a whole task: no default applies
    ],
)
def test_a_tool_s_own_settings_win_then_the_agent_s_then_the_ensemble_s(
    tool_: Any, expected: CallPolicy | None
) -> None:
    from agentensemble.tools.policy import layered

    tools = ToolResolver().resolve([tool_])
    [name] = tools.names
    resolved = tools.get(name)
    assert resolved is not None
    assert resolved.plan.under(resolved.name, layered(AGENT, ENSEMBLE)) == expected


def run(tools: list[Any], script: list[Any], agent: Any = None, ensemble: Any = None) -> Any:
    worker = Agent(
        role="Worker", goal="Work", tools=tools, llm=ScriptedChatModel(script), tool_policy=agent
    )
    return Ensemble(tasks=[Task(description="Work", agent=worker)], tool_policy=ensemble).run()


def flaky_tool(fails: int) -> tuple[Any, list[int]]:
    attempts: list[int] = []

    @tool
    def flaky(query: str) -> str:
        """Fails a few times, then answers."""
        attempts.append(1)
        if len(attempts) <= fails:
            raise ConnectionError(f"attempt {len(attempts)} failed")
        return "answer"

    return flaky, attempts


@pytest.mark.parametrize(
    ("agent", "ensemble", "runs", "output"),
    [
        (None, None, 1, "Error: ConnectionError: attempt 1 failed"),
        (None, ToolPolicy(retries=1), 2, "answer"),  # the ensemble's default
        (
            ToolPolicy(retries=0),
            ToolPolicy(retries=1),
            1,
            "Error: ConnectionError: attempt 1 failed",
        ),
        (ToolPolicy(timeout=30), ToolPolicy(retries=1), 2, "answer"),  # setting by setting
    ],
)
def test_defaults_reach_the_call_end_to_end(
    agent: Any, ensemble: Any, runs: int, output: str
) -> None:
    flaky, attempts = flaky_tool(fails=1)
    result = run([flaky], [tool_call("flaky", {"query": "q"}), "done"], agent, ensemble)
    assert len(attempts) == runs
    assert result.task_outputs[0].tool_calls[0].output == output


def test_an_agent_s_default_timeout_times_a_tool_without_its_own() -> None:
    import asyncio

    @tool
    async def hang(query: str) -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "never"

    result = run([hang], [tool_call("hang", {"query": "q"}), "done"], ToolPolicy(timeout=0.2))
    assert result.task_outputs[0].tool_calls[0].output == "Error: tool 'hang' timed out after 0.2 s"


# -- a timeout attribute of the tool's own ----------------------------------------------------


def clashing(timeout: Any, own_deadline: bool = False) -> AgentTool:
    class Search(AgentTool):
        name = "search"
        description = "A third-party tool with a timeout of its own."

        def execute(self, input: str) -> ToolResult:
            return ToolResult.success(input)

    Search.timeout = timeout  # type: ignore[assignment]
    if own_deadline:
        Search.own_deadline = True  # type: ignore[attr-defined]
    return Search()


@pytest.mark.parametrize("timeout", ["30s", {"connect": 5}, 0, -1])
def test_a_timeout_that_is_no_number_of_seconds_is_refused_with_the_way_out(timeout: Any) -> None:
    with pytest.raises(ConfigurationError) as info:
        ToolResolver().resolve([clashing(timeout)])
    message = str(info.value)
    assert message.startswith("tool 'search' (Search): timeout must be a number of seconds")
    assert "own_deadline = True" in message


@pytest.mark.parametrize(
    ("timeout", "own_deadline", "policy_timeout"),
    [
        ("30s", True, None),  # its own business: left alone, and no default timeout either
        (timedelta(seconds=4), False, 4.0),  # a duration counts as its seconds
        (4, True, 4 + _calls.OWN_DEADLINE_GRACE),  # a number it enforces: the backstop
    ],
)
def test_a_timeout_the_framework_can_read_or_is_told_to_leave_alone(
    timeout: Any, own_deadline: bool, policy_timeout: float | None
) -> None:
    resolved = ToolResolver().resolve([clashing(timeout, own_deadline)]).get("search")
    assert resolved is not None
    policy = resolved.plan.under("search", ToolPolicy(timeout=1, retries=1))
    assert policy is not None
    assert (policy.timeout, policy.retries) == (policy_timeout, 1)


# -- crew files -------------------------------------------------------------------------------


def test_a_crew_file_sets_the_agent_s_and_the_ensemble_s_policy() -> None:
    ensemble = load_crew(
        {
            "tool_policy": {"retries": 1},
            "agents": {"a": {"role": "R", "goal": "G", "tool_policy": {"timeout": 30}}},
            "tasks": [{"description": "D", "agent": "a"}],
        }
    )
    assert ensemble.tool_policy == ToolPolicy(retries=1)
    assert ensemble.agents[0].tool_policy == ToolPolicy(timeout=30)


@pytest.mark.parametrize(
    ("crew", "key", "words"),
    [
        ({"tool_policy": {"timeout": 0}}, "tool_policy", "timeout must be"),
        ({"agents": {"a": {"tool_policy": {"retries": -2}}}}, "agents.a", "retries must be"),
    ],
)
def test_a_crew_file_s_bad_policy_names_the_key(crew: Any, key: str, words: str) -> None:
    crew = {"tasks": [{"description": "D", **({"agent": "a"} if "agents" in crew else {})}], **crew}
    if "agents" in crew:
        crew["agents"]["a"].update(role="R", goal="G")
    with pytest.raises(ConfigFileError) as info:
        load_crew(crew)
    assert key in str(info.value) and words in str(info.value), str(info.value)
