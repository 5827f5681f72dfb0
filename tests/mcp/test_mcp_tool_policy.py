"""MCP tools under the tool policy, against a real server process: the server's ``timeout``
is its tools' deadline (the policy's message, event and retries, the SDK's wait only a
backstop), ``tool_policy`` and ``tool_policies`` set timeout, retries and calls at once, and
an agent's ``tool_policy`` fills what the server leaves unset."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agentensemble import Agent, Ensemble, Task, ToolPolicy
from agentensemble.errors import ConfigurationError, TaskExecutionError
from agentensemble.events import ToolCallTimedOut
from agentensemble.mcp import MCPServerError, MCPServerStdio
from agentensemble.testing import ScriptedChatModel, tool_call, tool_calls
from agentensemble.tools import _calls

pytestmark = pytest.mark.anyio
SERVER = Path(__file__).with_name("mcp_policy_server.py")


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_calls, "RETRY_BACKOFF", 0.0)


def policy_server(**options: Any) -> MCPServerStdio:
    return MCPServerStdio(sys.executable, [str(SERVER)], **options)


class Seen:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)


async def run(server: MCPServerStdio, script: list[Any], **agent: Any) -> tuple[Any, Seen]:
    seen = Seen()
    worker = Agent(
        role="Worker", goal="Use the tools", tools=[server], llm=ScriptedChatModel(script), **agent
    )
    ensemble = Ensemble(tasks=[Task(description="Work", agent=worker)], listeners=[seen])
    return await ensemble.arun(), seen


def outputs(output: Any) -> list[str]:
    return [record.output for record in output.task_outputs[0].tool_calls]


async def test_the_server_timeout_is_its_tools_policy_and_the_server_stays_usable() -> None:
    output, seen = await run(
        policy_server(timeout=0.5),
        [tool_call("sleep", {"seconds": 60}), tool_call("add", {"a": 2, "b": 3}), "done"],
    )
    assert outputs(output) == ["Error: tool 'sleep' timed out after 0.5 s", "5"]
    [timed_out] = [e for e in seen.events if isinstance(e, ToolCallTimedOut)]
    assert (timed_out.tool_name, timed_out.timeout) == ("sleep", 0.5)


async def test_a_tool_policy_timeout_replaces_the_server_timeout_for_calls() -> None:
    # the SDK waited only the server's 0.3 s before: now the call's deadline is the policy's
    server = policy_server(timeout=0.3, tool_policy=ToolPolicy(timeout=30))
    output, _ = await run(server, [tool_call("sleep", {"seconds": 1}), "done"])
    assert outputs(output) == ["slept 1 s"]


@pytest.mark.parametrize(
    "options",
    [
        {"tool_policies": {"slow_once": ToolPolicy(timeout=0.5, retries=1)}},
        {"tool_policies": {"slow_once": {"timeout": 0.5, "retries": 1}}},  # as a crew file has it
        {"tool_policy": {"retries": 1}, "tool_policies": {"slow_once": {"timeout": 0.5}}},
    ],
)
async def test_a_timed_out_call_is_retried_by_the_server_s_policy(options: Any) -> None:
    output, _ = await run(policy_server(**options), [tool_call("slow_once", {}), "done"])
    assert outputs(output) == ["answered call 2"]


async def test_an_agent_s_policy_fills_what_the_server_leaves_unset() -> None:
    server = policy_server(tool_policies={"slow_once": {"timeout": 0.5}})
    output, _ = await run(
        server, [tool_call("slow_once", {}), "done"], tool_policy=ToolPolicy(retries=1)
    )
    assert outputs(output) == ["answered call 2"]


@pytest.mark.parametrize(
    ("bound", "patience", "peak"),
    [
        (None, 30, 2),  # no bound: both calls run at once (each waits to see the other)
        (1, 0.3, 1),  # one at a time: neither ever sees the other
    ],
)
async def test_max_concurrency_bounds_a_server_tool_s_calls_at_once(
    bound: int | None, patience: float, peak: int
) -> None:
    server = policy_server(tool_policies={"gather": {"max_concurrency": bound}})
    two = tool_calls(*(("gather", {"together": 2, "patience": patience}) for _ in range(2)))
    output, _ = await run(server, [two, "done"])
    assert outputs(output)[-1] == f"peak {peak}"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"tool_policy": {"timeout": 0}}, "tool_policy: .*timeout must be"),
        ({"tool_policy": "fast"}, "tool_policy must be a ToolPolicy"),
        ({"tool_policy": {"tries": 2}}, "tool_policy: .*tries"),
        ({"tool_policies": ["sleep"]}, "tool_policies must map"),
        ({"tool_policies": {"sleep": {"retries": -1}}}, r"tool_policies\['sleep'\]: .*retries"),
    ],
)
def test_policy_settings_that_cannot_work_are_refused_naming_the_field(
    options: Any, named: str
) -> None:
    with pytest.raises(ConfigurationError, match=named):
        policy_server(**options)


async def test_a_policy_for_a_tool_the_server_does_not_list_fails_before_any_model_call() -> None:
    model = ScriptedChatModel(["never asked"])
    server = policy_server(tool_policies={"slepe": {"timeout": 1}})
    agent = Agent(role="Worker", goal="Work", tools=[server], llm=model)
    with pytest.raises(
        (MCPServerError, TaskExecutionError), match=r"tool_policies names .*'slepe'"
    ):
        await Ensemble(tasks=[Task(description="Work", agent=agent)]).arun()
    assert model.requests == []
