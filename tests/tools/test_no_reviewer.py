"""Tools that ask a reviewer, in a run without a review handler: one error, wherever it is found.

A task's own tools, a tool source (an MCP server, not started to find out) and a worker of a
hierarchical run are checked before any model call, and all say where, which tools, and what to do.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentensemble import Agent, Ensemble, Task, Workflow, tool
from agentensemble.errors import ConfigurationError
from agentensemble.mcp import MCPServerStdio
from agentensemble.testing import ScriptedChatModel
from agentensemble_review import HumanInputTool

FIX = "but the ensemble has no review_handler. Pass Ensemble(review_handler=...)"
MCP_SERVER = str(Path(__file__).parents[1] / "mcp" / "mcp_test_server.py")


@tool(requires_approval=True)
def deploy(version: str) -> str:
    """Deploy a version.

    Args:
        version: which one
    """
    return f"deployed {version}"


@tool
def look(what: str) -> str:
    """Look at something.

    Args:
        what: the thing
    """
    return what


def task_tools(model: ScriptedChatModel) -> Ensemble:
    agent = Agent(role="Ops", goal="Ship", tools=[look, deploy, HumanInputTool()], llm=model)
    return Ensemble(tasks=[Task(description="Ship it", agent=agent)])


def mcp_source(model: ScriptedChatModel) -> Ensemble:
    server = MCPServerStdio(sys.executable, [MCP_SERVER], requires_approval=["add", "die"])
    agent = Agent(role="Ops", goal="Ship", tools=[server], llm=model)
    return Ensemble(tasks=[Task(description="Ship it", agent=agent)])


def worker(model: ScriptedChatModel) -> Ensemble:
    ensemble = Ensemble(
        tasks=[Task(description="Ship it")],
        agents=[Agent(role="Deployer", goal="Deploy", tools=[look, deploy], llm=model)],
        workflow=Workflow.HIERARCHICAL,
        llm=model,
    )
    ensemble.run()  # workers are checked when the run starts, before the manager's first call
    return ensemble


PLACES: list[tuple[str, Callable[[ScriptedChatModel], Ensemble], str]] = [
    (
        "a task's tools",
        task_tools,
        f"task 1 ('Ship it'): deploy, ask_human require approval (or ask the human), {FIX}",
    ),
    (
        "a tool source",
        mcp_source,
        "task 1 ('Ship it'): add, die of MCP server "
        f"'{sys.executable} {MCP_SERVER}' require approval (or ask the human), {FIX}",
    ),
    (
        "a worker",
        worker,
        f"agent 'Deployer' (as a worker): deploy require approval (or ask the human), {FIX}",
    ),
]


@pytest.mark.parametrize(("place", "build", "message"), PLACES, ids=[p[0] for p in PLACES])
def test_every_place_says_where_which_tools_and_what_to_do(
    place: str, build: Callable[[ScriptedChatModel], Ensemble], message: str
) -> None:
    model = ScriptedChatModel(["never"])
    with pytest.raises(ConfigurationError) as caught:
        build(model)
    assert str(caught.value) == message
    assert model.requests == []
