"""The tool policy for tools from other sources: a pipeline (as a whole, and each step's own
settings inside it) and the built-in tools (set on the object)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentensemble import Agent, Ensemble, Task, ToolPipeline, ToolPolicy, tool
from agentensemble.errors import ConfigurationError
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble.tools import _calls
from agentensemble.tools.builtin import Calculator
from agentensemble.tools.resolver import ToolResolver


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_calls, "RETRY_BACKOFF", 0.0)


def run(tools: list[Any], name: str, **agent: Any) -> Any:
    model = ScriptedChatModel([tool_call(name, {"input": "q"}), "done"])
    worker = Agent(role="Worker", goal="Work", tools=tools, llm=model, **agent)
    output = Ensemble(tasks=[Task(description="Work", agent=worker)]).run()
    return output.task_outputs[0].tool_calls[0]


@tool
def first(text: str) -> str:
    """Pass the text on."""
    return text


@tool(timeout=0.2)
async def hang(text: str) -> str:
    """Never answers."""
    await asyncio.Event().wait()
    return "never"


def test_a_step_s_own_timeout_holds_inside_a_pipeline() -> None:
    record = run([ToolPipeline([first, hang], name="chain")], "chain")
    assert record.output == "Error: tool 'hang' timed out after 0.2 s"


def test_a_step_s_own_retries_hold_inside_a_pipeline() -> None:
    attempts: list[int] = []

    @tool(retries=1)
    def flaky(text: str) -> str:
        """Fails once."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("once")
        return f"got {text}"

    record = run([ToolPipeline([first, flaky], name="chain")], "chain")
    assert (record.output, len(attempts)) == ("got q", 2)


@tool
async def hang_quietly(text: str) -> str:
    """Never answers, and sets no timeout of its own."""
    await asyncio.Event().wait()
    return "never"


@pytest.mark.parametrize(
    ("pipeline", "agent"),
    [
        ({"timeout": 0.2}, None),  # the pipeline's own
        ({}, ToolPolicy(timeout=0.2)),  # the agent's default, for the whole pipeline
    ],
)
def test_a_pipeline_as_a_whole_takes_a_timeout(pipeline: Any, agent: Any) -> None:
    chain = ToolPipeline([first, hang_quietly], name="chain", **pipeline)
    record = run([chain], "chain", tool_policy=agent)
    assert record.output == "Error: tool 'chain' timed out after 0.2 s"


@pytest.mark.parametrize(
    ("settings", "named"),
    [({"timeout": 0}, "timeout must be"), ({"max_concurrency": 0}, "max_concurrency must be")],
)
def test_a_pipeline_s_bad_policy_is_refused_naming_it(settings: Any, named: str) -> None:
    with pytest.raises(ConfigurationError, match=f"ToolPipeline 'chain': tool 'chain': {named}"):
        ToolPipeline([first], name="chain", **settings)


def test_a_step_s_bad_policy_is_refused_naming_the_step() -> None:
    class Odd(Calculator):
        timeout = "soon"  # type: ignore[assignment]

    with pytest.raises(ConfigurationError, match="ToolPipeline step 2: tool 'calculator'"):
        ToolPipeline([first, Odd()], name="chain")


def test_a_built_in_tool_takes_the_policy_as_attributes_of_the_object() -> None:
    calculator = Calculator()
    calculator.retries = 2
    calculator.max_concurrency = 4
    resolved = ToolResolver().resolve([calculator]).get("calculator")
    assert resolved is not None
    assert resolved.plan.under("calculator", ToolPolicy(timeout=5)) == _calls.CallPolicy(
        "calculator", 5, 2, 4
    )


def test_a_remote_a2a_agent_keeps_its_own_deadline_under_a_default() -> None:
    from agentensemble.serve.a2a_remote import A2AAgent

    remote = A2AAgent("http://127.0.0.1:9/", name="remote", timeout=120)
    remote.max_concurrency = 1  # one question at a time to that agent
    resolved = ToolResolver().resolve([remote]).get("remote")
    assert resolved is not None
    # its own 120 s (the policy's backstop 2 s later) wins over the agent's 5 s
    assert resolved.plan.under("remote", ToolPolicy(timeout=5, retries=1)) == _calls.CallPolicy(
        "remote", 120 + _calls.OWN_DEADLINE_GRACE, 1, 1
    )
