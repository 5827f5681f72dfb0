"""Workflow.HIERARCHICAL and peer delegation through litellm against the local server: every
request the server counts is a manager turn or a worker turn, nothing more."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply, TextReply, ToolCallsReply

from agentensemble import LLM, Agent, Ensemble, Task, Workflow

pytestmark = pytest.mark.e2e


def llm_for(server: OpenAIServer) -> LLM:
    return LLM(model="openai/test-model", api_base=server.base_url, api_key="sk-e2e-h", timeout=10)


def role_of(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"]).split(".", 1)[0].removeprefix("You are ")


def delegation(role: str, instructions: str) -> tuple[str, str]:
    return ("delegate_task", json.dumps({"agent_role": role, "instructions": instructions}))


def test_three_delegations_cost_exactly_the_manager_and_worker_turns(
    openai_server: OpenAIServer,
) -> None:
    plan = [
        delegation("Researcher", "facts on tides"),
        delegation("Analyst", "what the facts mean"),
        delegation("Writer", "a two-line report"),
    ]

    def responder(body: dict[str, Any]) -> Reply:
        role = role_of(body)
        if role == "Manager":
            turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
            if turn < len(plan):
                return ToolCallsReply((plan[turn],))
            results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
            return TextReply("Final: " + " / ".join(results))
        return TextReply(f"{role} says ok")

    openai_server.set_responder(responder)
    llm = llm_for(openai_server)
    agents = [Agent(role=r, goal=f"be a good {r}") for r in ("Researcher", "Analyst", "Writer")]
    ensemble = Ensemble(
        tasks=[Task(description="Report on tides")],
        agents=agents,
        workflow=Workflow.HIERARCHICAL,
        llm=llm,
    )

    result = ensemble.run()

    assert result.raw == "Final: Researcher says ok / Analyst says ok / Writer says ok"
    assert [o.agent_role for o in result.task_outputs] == ["Researcher", "Analyst", "Writer"]
    roles = [role_of(body) for body in openai_server.requests]
    assert roles.count("Manager") == 4  # three delegating turns and the final answer
    assert len(roles) == 4 + 3  # plus one turn per worker, nothing more
    manager_turns = 4
    worker_turns = sum(o.llm_calls for o in result.task_outputs)
    assert len(openai_server.requests) == manager_turns + worker_turns


def test_a_peer_asks_another_agent_over_http(openai_server: OpenAIServer) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        role = role_of(body)
        if role == "Writer" and body["messages"][-1]["role"] == "user":
            args = json.dumps({"agent_role": "Researcher", "instructions": "one fact on tides"})
            return ToolCallsReply((("delegate_to_agent", args),))
        if role == "Writer":
            return TextReply("Report using: " + body["messages"][-1]["content"])
        return TextReply("the moon pulls the sea")

    openai_server.set_responder(responder)
    llm = llm_for(openai_server)
    writer = Agent(role="Writer", goal="write", allow_delegation=True, llm=llm)
    researcher = Agent(role="Researcher", goal="research", llm=llm)
    task = Task(description="Write about tides", agent=writer)

    result = Ensemble(tasks=[task], agents=[researcher]).run()

    assert result.raw == "Report using: the moon pulls the sea"
    (call,) = result.task_outputs[0].tool_calls
    assert (call.name, call.output) == ("delegate_to_agent", "the moon pulls the sea")
    assert [role_of(b) for b in openai_server.requests] == ["Writer", "Researcher", "Writer"]


def test_the_run_cost_counts_the_managers_own_model_calls(openai_server: OpenAIServer) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        if role_of(body) == "Manager":
            if any(m["role"] == "tool" for m in body["messages"]):
                return TextReply("Final answer", usage=(1000, 100))
            return ToolCallsReply((delegation("Researcher", "facts"),), usage=(1000, 100))
        return TextReply("facts", usage=(1000, 100))

    openai_server.set_responder(responder)
    priced = LLM(  # a model the bundled price table knows
        model="openai/gpt-4o-mini", api_base=openai_server.base_url, api_key="sk-e2e-h"
    )
    ensemble = Ensemble(
        tasks=[Task(description="Report on tides")],
        agents=[Agent(role="Researcher", goal="research")],
        workflow=Workflow.HIERARCHICAL,
        llm=priced,
    )

    result = ensemble.run()

    [worker] = result.task_outputs
    assert worker.cost_usd is not None and worker.cost_usd > 0
    # two manager turns and one worker turn, all the same size: three times the worker's cost
    assert result.cost_usd == pytest.approx(3 * worker.cost_usd)
