"""Agents asking peers: Agent(allow_delegation=True) and the delegate_to_agent tool."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from agentensemble import (
    Agent,
    ChatResponse,
    DelegationCompleted,
    DelegationFailed,
    DelegationStarted,
    Ensemble,
    EnsembleEvent,
    Task,
    tool,
)
from agentensemble.testing import FunctionChatModel, ScriptedChatModel, tool_call


def ask(role: str, instructions: str) -> ChatResponse:
    return tool_call("delegate_to_agent", {"agent_role": role, "instructions": instructions})


class Events:
    def __init__(self) -> None:
        self.seen: list[EnsembleEvent] = []

    def on_event(self, event: EnsembleEvent) -> None:
        self.seen.append(event)


def asks_once(role: str, instructions: str, *, answer: str = "") -> FunctionChatModel:
    """Delegates on its first turn; then answers with ``answer`` plus what it got back."""

    def respond(messages: list[dict[str, Any]], tools: Any) -> ChatResponse | str:
        if messages[-1]["role"] == "tool":
            return f"{answer}{messages[-1]['content']}"
        return ask(role, instructions)

    return FunctionChatModel(respond)


@tool
def almanac(day: str) -> str:
    """Look up the tide table.

    Args:
        day: which day
    """
    return f"high tide at 6:00 on {day}"


def test_a_delegating_agent_asks_a_peer_who_runs_as_itself() -> None:
    expert_model = ScriptedChatModel([tool_call("almanac", {"day": "monday"}), "6:00"])
    expert = Agent(role="Tide expert", goal="Know the tides", tools=[almanac], llm=expert_model)
    writer_model = asks_once("Tide expert", "When is high tide on Monday?", answer="At ")
    writer = Agent(role="Writer", goal="Write", allow_delegation=True, llm=writer_model)
    events = Events()
    ensemble = Ensemble(
        tasks=[Task(description="Say when high tide is", agent=writer)],
        agents=[expert],
        listeners=[events],
    )

    result = ensemble.run()

    assert result.raw == "At 6:00"
    (call,) = result.task_outputs[0].tool_calls
    assert call.name == "delegate_to_agent"
    assert json.loads(call.arguments)["agent_role"] == "Tide expert"
    assert call.output == "6:00"
    # the expert ran as itself: its own prompt, tools and model
    first = expert_model.requests[0]
    assert first.messages[0]["content"].startswith("You are Tide expert.")
    assert "When is high tide on Monday?" in first.last_user_content
    assert [t["function"]["name"] for t in first.tools or []] == ["almanac"]
    # the tool lists the others, never the asker
    spec = next(t for t in writer_model.requests[0].tools or [] if t["function"]["name"])
    assert spec["function"]["parameters"]["properties"]["agent_role"]["enum"] == ["Tide expert"]
    started = [e for e in events.seen if isinstance(e, DelegationStarted)]
    completed = [e for e in events.seen if isinstance(e, DelegationCompleted)]
    assert [(e.from_role, e.to_role, e.depth) for e in started] == [("Writer", "Tide expert", 1)]
    assert completed[0].output.raw == "6:00"


def test_agents_without_allow_delegation_get_no_tool() -> None:
    model = ScriptedChatModel(["done"])
    worker = Agent(role="Worker", goal="work", llm=model)
    Ensemble(tasks=[Task(description="t", agent=worker)], agents=[Agent(role="B", goal="g")]).run()

    assert model.requests[0].tools is None


def chain_team(max_depth: int) -> tuple[Ensemble, Events, dict[str, FunctionChatModel]]:
    """A asks B, B asks C, C asks A ... each passes the question on, then relays the answer."""
    models = {
        "A": asks_once("B", "pass it on", answer="A<-"),
        "B": asks_once("C", "pass it on", answer="B<-"),
        "C": asks_once("A", "pass it on", answer="C<-"),
    }
    agents = {r: Agent(role=r, goal="g", allow_delegation=True, llm=m) for r, m in models.items()}
    events = Events()
    ensemble = Ensemble(
        tasks=[Task(description="start", agent=agents["A"])],
        agents=list(agents.values()),
        max_delegation_depth=max_depth,
        listeners=[events],
    )
    return ensemble, events, models


@pytest.mark.parametrize(
    ("depth", "raw"),
    [
        (0, "A<-Error: Delegation depth limit (0) reached: do this work yourself instead of "),
        (1, "A<-B<-Error: Delegation depth limit (1) reached"),
        (2, "A<-B<-C<-Error: Delegation depth limit (2) reached"),
        (3, "A<-B<-C<-A<-Error: Delegation depth limit (3) reached"),  # the cycle is cut
    ],
)
def test_the_depth_cap_allows_n_nested_hand_offs_then_refuses(depth: int, raw: str) -> None:
    ensemble, events, _ = chain_team(depth)

    result = ensemble.run()

    assert result.raw.startswith(raw)
    assert "do this work yourself" in result.raw
    failed = [e for e in events.seen if isinstance(e, DelegationFailed)]
    assert [e.depth for e in failed] == [depth + 1]
    assert sum(isinstance(e, DelegationCompleted) for e in events.seen) == depth


def test_a_failing_peer_is_an_error_the_asker_sees() -> None:
    def broken(messages: list[dict[str, Any]], tools: Any) -> str:
        raise RuntimeError("no answer")

    asker = Agent(
        role="Asker", goal="g", allow_delegation=True, llm=asks_once("Helper", "help", answer="")
    )
    helper = Agent(role="Helper", goal="g", llm=FunctionChatModel(broken))

    result = Ensemble(tasks=[Task(description="t", agent=asker)], agents=[helper]).run()

    assert result.raw == "Error: Helper could not finish: RuntimeError: no answer"
    assert not result.task_outputs[0].tool_calls[0].is_success


def test_delegating_agents_need_unique_roles() -> None:
    with pytest.raises(ValidationError, match="share the role 'Expert' / 'EXPERT'"):
        Ensemble(
            tasks=[Task(description="t", agent=Agent(role="A", goal="g", allow_delegation=True))],
            agents=[Agent(role="Expert", goal="g"), Agent(role="EXPERT", goal="g")],
        )


def test_a_peer_without_a_model_fails_before_any_call() -> None:
    model = ScriptedChatModel()
    asker = Agent(role="Asker", goal="g", allow_delegation=True, llm=model)
    ensemble = Ensemble(
        tasks=[Task(description="t", agent=asker)], agents=[Agent(role="Helper", goal="g")]
    )

    with pytest.raises(Exception, match="agent 'Helper' has no model"):
        ensemble.run()
    assert model.requests == []


def test_verbose_progress_shows_each_hand_off() -> None:
    import io

    from agentensemble import ConsoleProgressListener

    stream = io.StringIO()
    asker = Agent(
        role="Asker", goal="g", allow_delegation=True, llm=asks_once("Helper", "help\x1b[2J me")
    )
    helper = Agent(role="Helper", goal="g", llm=ScriptedChatModel(["helped"]))
    Ensemble(
        tasks=[Task(description="t", agent=asker)],
        agents=[helper],
        listeners=[ConsoleProgressListener(stream)],
    ).run()

    lines = stream.getvalue().splitlines()
    assert "    Asker asks Helper: help\\x1b[2J me" in lines
    assert "    Helper answered Asker" in lines
