"""Loops, graphs, nested ensembles and for_each through litellm against the local server: real
HTTP, real concurrency, streaming, tool approvals, trace and events."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from openai_server import OpenAIServer, Reply, TextReply
from pydantic import BaseModel

from agentensemble import (
    LLM,
    Agent,
    Edge,
    Ensemble,
    EnsembleCompleted,
    EnsembleEvent,
    Graph,
    GraphStepCompleted,
    Loop,
    LoopIterationCompleted,
    RetryPolicy,
    Task,
    TokenDelta,
    Workflow,
    tool,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("model_lane")]

WAIT = 10.0
FAST = RetryPolicy(max_attempts=2, initial_backoff=0.001, max_backoff=0.01, jitter=0)


class Verdict(BaseModel):
    approved: bool
    remarks: str


def llm_for(server: OpenAIServer) -> LLM:
    return LLM(
        model="openai/test-model",
        api_base=server.base_url,
        api_key="sk-e2e-workflow-steps",
        retry_policy=FAST,
        timeout=WAIT,
    )


def task_of(body: dict[str, Any]) -> str:
    prompt = str(body["messages"][-1]["content"])
    return prompt.split("## Task\n", 1)[1].split("\n", 1)[0]


def user_prompt(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


class Events:
    def __init__(self) -> None:
        self.seen: list[EnsembleEvent] = []

    def on_event(self, event: EnsembleEvent) -> None:
        self.seen.append(event)


def writer_critic(server: OpenAIServer, listeners: list[Any] | None = None) -> Ensemble:
    llm = llm_for(server)
    writer = Task(name="write", description="Write a haiku about {topic}")
    critic = Task(
        name="critique",
        description="Critique the haiku",
        context=[writer],
        output_type=Verdict,
        agent=Agent(role="Critic", goal="Judge haiku strictly", llm=llm),
    )
    loop = Loop(
        name="polish",
        body=[writer, critic],
        until=lambda state: state.outputs["critique"].parsed.approved,
        max_iterations=4,
    )
    return Ensemble(tasks=[loop], llm=llm, listeners=listeners or [])


def test_a_writer_and_a_typed_critic_go_round_until_approved(openai_server: OpenAIServer) -> None:
    openai_server.push_text("draft one")
    openai_server.push_text(json.dumps({"approved": False, "remarks": "no season word"}))
    openai_server.push_text("draft two, autumn")
    openai_server.push_text(json.dumps({"approved": True, "remarks": "good"}))
    events = Events()

    out = writer_critic(openai_server, [events]).run({"topic": "rain"})

    assert out.loops["polish"].iterations == 2 and out.loops["polish"].stopped_by == "until"
    assert [o.raw for o in out.task_outputs][::2] == ["draft one", "draft two, autumn"]
    assert out.parsed == Verdict(approved=True, remarks="good")
    revision = user_prompt(openai_server.requests[2])
    assert "draft one" in revision and "no season word" in revision
    assert "no season word" not in user_prompt(openai_server.requests[0])
    iterations = [e for e in events.seen if isinstance(e, LoopIterationCompleted)]
    assert [e.iteration for e in iterations] == [1, 2]
    assert out.usage.prompt_tokens > 0
    assert out.trace is not None and len(out.trace.tasks) == 4
    kinds = [e.type for e in out.trace.events]
    assert kinds.count("LoopIterationCompleted") == 2


def test_a_triage_graph_goes_back_to_research_when_the_answer_is_thin(
    openai_server: OpenAIServer,
) -> None:
    replies = {
        "Triage": ["billing"],
        "Research": ["notes 1", "notes 2"],
        "Answer": ["THIN", "full"],
    }

    def responder(body: dict[str, Any]) -> Reply:
        return TextReply(replies[task_of(body).split()[0]].pop(0))

    openai_server.set_responder(responder)
    graph = Graph(
        name="support",
        start="triage",
        states={
            "triage": Task(description="Triage the request"),
            "research": Task(description="Research the request"),
            "answer": Task(description="Answer the request"),
        },
        edges=[
            Edge("triage", "research"),
            Edge("research", "answer"),
            Edge("answer", "research", when=lambda s: s.output.raw == "THIN"),
            Edge("answer", Graph.END),
        ],
    )
    events = Events()
    out = Ensemble(tasks=[graph], llm=llm_for(openai_server), listeners=[events]).run()

    assert out.graphs["support"].path == ["triage", "research", "answer", "research", "answer"]
    assert out.raw == "full"
    steps = [(e.state, e.next_state) for e in events.seen if isinstance(e, GraphStepCompleted)]
    assert steps[-1] == ("answer", Graph.END)
    assert "THIN" in user_prompt(openai_server.requests[3])


def test_for_each_items_are_in_flight_at_once_then_reduced(openai_server: OpenAIServer) -> None:
    mappers = threading.Barrier(3, timeout=WAIT)  # broken (an error) if they came in turn

    def responder(body: dict[str, Any]) -> Reply:
        task = task_of(body)
        if task.startswith("Summarise"):
            mappers.wait()
            return TextReply(f"summary of {task.split()[-1]}")
        return TextReply("merged")

    openai_server.set_responder(responder)
    summarise = Task(name="map", description="Summarise {item}", for_each="docs")
    merge = Task(name="reduce", description="Merge the summaries", context=[summarise])
    out = Ensemble(tasks=[summarise, merge], llm=llm_for(openai_server), max_concurrency=3).run(
        {"docs": ["a", "b", "c"]}
    )
    assert [o.raw for o in out.task_outputs] == [
        "summary of a",
        "summary of b",
        "summary of c",
        "merged",
    ]
    merge_prompt = user_prompt(openai_server.requests[-1])
    assert merge_prompt.index("summary of a") < merge_prompt.index("summary of c")


def test_a_parallel_phase_nested_in_a_sequential_pipeline(openai_server: OpenAIServer) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        return TextReply(f"done: {task_of(body)}")

    openai_server.set_responder(responder)
    research = Ensemble(
        name="research",
        tasks=[Task(description="Find {topic} papers"), Task(description="Find {topic} news")],
        workflow=Workflow.PARALLEL,
    )
    write = Task(description="Write the report", context=[research])
    out = Ensemble(tasks=[research, write], llm=llm_for(openai_server)).run({"topic": "tides"})
    assert out.raw == "done: Write the report"
    assert "done: Find tides news" in user_prompt(openai_server.requests[-1])


def test_a_loop_streams_its_tokens_and_events(openai_server: OpenAIServer) -> None:
    import asyncio

    openai_server.push_text("first draft")
    openai_server.push_text(json.dumps({"approved": True, "remarks": "fine"}))

    async def collect() -> list[Any]:
        return [e async for e in writer_critic(openai_server).astream({"topic": "sun"})]

    events = asyncio.run(collect())
    assert (
        "".join(e.text for e in events if isinstance(e, TokenDelta) and e.task_name == "write")
        == "first draft"
    )
    assert any(isinstance(e, LoopIterationCompleted) for e in events)
    assert isinstance(events[-1], EnsembleCompleted)
    assert events[-1].output.loops["polish"].iterations == 1


def test_a_tool_approval_is_asked_each_iteration(openai_server: OpenAIServer) -> None:
    from agentensemble_review import Continue, ScriptedReviewHandler

    ran: list[str] = []

    @tool(requires_approval=True)
    def publish(text: str) -> str:
        """Publish a text."""
        ran.append(text)
        return "published"

    openai_server.push_tool_calls([("publish", {"text": "v1"})])
    openai_server.push_text("sent v1")
    openai_server.push_tool_calls([("publish", {"text": "v2"})])
    openai_server.push_text("sent v2")
    llm = llm_for(openai_server)
    agent = Agent(role="Publisher", goal="Publish", tools=[publish], llm=llm)
    loop = Loop(
        name="publish",
        body=[Task(name="p", description="Publish it", agent=agent)],
        max_iterations=2,
    )
    reviewer = ScriptedReviewHandler([Continue(), Continue()])
    out = Ensemble(tasks=[loop], review_handler=reviewer).run()
    assert ran == ["v1", "v2"]
    assert len(reviewer.requests) == 2
    assert [o.raw for o in out.task_outputs] == ["sent v1", "sent v2"]
