"""A remote A2A agent as a direct delegation target: ``Ensemble(agents=[A2AAgent(...)])``.

The manager's instructions are the remote's request, its answer the delegation's output (a
recorded task output), its failure the delegation's failure (a tool error the manager reads and
works with); its text is untrusted like any tool output: bounded, cleaned, redacted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import FakeRemote, crew_file, model_env, serving

from agentensemble import Agent, Ensemble, Task, Workflow, tool
from agentensemble.events import DelegationCompleted, DelegationFailed
from agentensemble.llm import LLM
from agentensemble.logging import register_secret
from agentensemble.serve import A2AAgent
from agentensemble.testing import OpenAICompatibleServer, ScriptedChatModel, text, tool_call

pytestmark = pytest.mark.anyio


class Seen:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)


@pytest.fixture
def remote() -> Iterator[FakeRemote]:
    server = FakeRemote()
    yield server
    server.close()


def _delegate(role: str, instructions: str) -> Any:
    return tool_call("delegate_task", {"agent_role": role, "instructions": instructions})


def test_a_manager_delegates_to_a_served_crew_over_a2a(tmp_path: Path) -> None:
    """End to end: our manager (its model on a local OpenAI-compatible server) delegates to
    ``serve-a2a`` (a subprocess, its own model on another local server); the remote article is
    the delegation's output; the second delegation fails remotely and the manager is told."""
    seen = Seen()
    with OpenAICompatibleServer() as remote_model, OpenAICompatibleServer() as our_model:
        remote_model.push_text("Facts.")
        remote_model.push_text("The remote article on tides.")
        for _ in range(6):
            remote_model.push_fault(500)  # the second remote run fails
        our_model.push_tool_calls(
            [("delegate_task", {"agent_role": "Writer", "instructions": "tides"})]
        )
        our_model.push_tool_calls(
            [("delegate_task", {"agent_role": "Writer", "instructions": "waves"})]
        )
        our_model.push_text("Report: the remote article, and waves were not covered.")
        env = model_env(remote_model.base_url)
        with serving(["serve-a2a", str(crew_file(tmp_path))], env) as base:
            writer = A2AAgent(base + "/", name="Writer", description="Writes articles")
            manager = LLM(
                model="openai/test-model",
                api_base=our_model.base_url,
                api_key="sk-a2a-delegation-test",
                timeout=30,
            )
            ensemble = Ensemble(
                tasks=[Task(description="A report on tides and waves", expected_output="A report")],
                agents=[writer],
                workflow=Workflow.HIERARCHICAL,
                manager_llm=manager,
                listeners=[seen],
            )
            output = ensemble.run()
        manager_requests = our_model.requests
    assert output.raw == "Report: the remote article, and waves were not covered."
    (delegated,) = output.task_outputs  # the failed delegation records nothing
    assert (delegated.agent_role, delegated.task_description) == ("Writer", "tides")
    assert "The remote article on tides." in delegated.raw
    first_answer = str(manager_requests[1]["messages"][-1])
    assert "The remote article on tides." in first_answer
    second_answer = str(manager_requests[2]["messages"][-1])
    assert "Writer could not finish" in second_answer and "task failed" in second_answer
    completed = [e for e in seen.events if isinstance(e, DelegationCompleted)]
    failed = [e for e in seen.events if isinstance(e, DelegationFailed)]
    assert len(completed) == 1 and len(failed) == 1
    brief = str(manager_requests[0]["messages"])
    assert "Writer: Writes articles" in brief  # the manager chooses by role and goal


async def test_hostile_remote_text_reaches_the_manager_bounded_cleaned_and_redacted(
    remote: FakeRemote,
) -> None:
    register_secret("delegated-leaked-secret-1")
    hostile = "\x1b[31mred\u202e evil delegated-leaked-secret-1 sk-abcdefghijklmnop " + "x" * 50_000
    remote.answers("TASK_STATE_COMPLETED", hostile)
    manager = ScriptedChatModel([_delegate("explainer", "go"), text("done")])
    ensemble = Ensemble(
        tasks=[Task(description="Report", expected_output="A report")],
        agents=[A2AAgent(remote.url, name="explainer", max_answer_chars=1_000)],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=manager,
    )
    output = await ensemble.arun()
    for seen_text in (output.task_outputs[0].raw, str(manager.requests[1].messages)):
        assert "\x1b" not in seen_text and "\u202e" not in seen_text
        assert "delegated-leaked-secret-1" not in seen_text
        assert "sk-abcdefghijklmnop" not in seen_text
    assert len(output.task_outputs[0].raw) < 1_100


@pytest.mark.parametrize(
    ("state", "message", "expected"),
    [
        ("TASK_STATE_FAILED", "the database is down", "task failed: the database is down"),
        ("TASK_STATE_REJECTED", None, "task rejected"),
        ("TASK_STATE_INPUT_REQUIRED", "which city?", "needs more input"),
    ],
)
async def test_a_remote_failure_is_the_delegations_failure(
    remote: FakeRemote, state: str, message: str | None, expected: str
) -> None:
    remote.answers(state, "", message=message)
    manager = ScriptedChatModel([_delegate("explainer", "go"), text("did it myself")])
    ensemble = Ensemble(
        tasks=[Task(description="Report", expected_output="A report")],
        agents=[A2AAgent(remote.url, name="explainer")],
        workflow=Workflow.HIERARCHICAL,
        manager_llm=manager,
    )
    output = await ensemble.arun()
    assert output.raw == "did it myself" and output.task_outputs == []
    told = str(manager.requests[1].messages[-1])
    assert "explainer could not finish" in told and expected in told


async def test_a_delegating_peer_can_ask_a_remote_agent(remote: FakeRemote) -> None:
    remote.answers("TASK_STATE_COMPLETED", "remote facts")
    model = ScriptedChatModel(
        [
            tool_call("delegate_to_agent", {"agent_role": "explainer", "instructions": "facts"}),
            text("article with remote facts"),
        ]
    )
    writer = Agent(role="Writer", goal="Write", llm=model, allow_delegation=True)
    ensemble = Ensemble(
        tasks=[Task(description="Write", expected_output="An article", agent=writer)],
        agents=[A2AAgent(remote.url, name="explainer")],
    )
    output = await ensemble.arun()
    assert output.raw == "article with remote facts"
    assert "remote facts" in str(model.requests[1].messages[-1])


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return query


@pytest.mark.parametrize(
    ("workflow", "tools", "expected"),
    [
        (Workflow.SEQUENTIAL, [], "answers delegations only"),
        (Workflow.PARALLEL, [], "answers delegations only"),
        (Workflow.HIERARCHICAL, [lookup], "cannot use our tools"),
    ],
)
def test_a_remote_agent_does_no_task_of_its_own(
    workflow: Workflow, tools: list[Any], expected: str
) -> None:
    member = A2AAgent("http://127.0.0.1:9/", name="explainer").as_team_member()
    with pytest.raises(ValueError, match=expected):
        Ensemble(
            tasks=[Task(description="Explain", agent=member, tools=tools)],
            workflow=workflow,
            manager_llm=ScriptedChatModel([text("unused")]),
        )
