"""Who decided a review, in the ``ReviewDecided`` event and the run's trace: the caller of the run
API or of the AG-UI endpoint (the name its token maps to), or of the served MCP tool, not the
handler's class name. Real HTTP on 127.0.0.1 (the hardened setup) or the real ``mcp`` client,
scripted models; a listener on the served ensemble keeps what the run emitted."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from ag_ui_helpers import mail_crew, post, resume, run_input, served, user
from serve_helpers import hardened_serving

from agentensemble import Agent, Ensemble, Task
from agentensemble.events import EnsembleCompleted, ReviewDecided
from agentensemble.serve import MCPReviewHandler, RunAPIReviewHandler, mcp_server, run_api
from agentensemble.testing import ScriptedChatModel, text

TOKENS = {"ann": "ann-token-long-enough-1", "bob": "bob-token-long-enough-2"}
WAIT = 30.0


class Seen:
    """What a run emitted: its ``ReviewDecided`` events and, once it ended, its trace's reviews."""

    def __init__(self) -> None:
        self.decided: list[ReviewDecided] = []
        self.reviews: list[Any] = []

    def on_event(self, event: Any) -> None:
        if isinstance(event, ReviewDecided):
            self.decided.append(event)
        elif isinstance(event, EnsembleCompleted):
            self.reviews = [r for task in event.output.trace.tasks for r in task.reviews]


def reviewed_writer(seen: Seen, handler: Any = None) -> Callable[[], Ensemble]:
    """A one-task writer reviewed after its task (by the run API's caller by default)."""

    def build() -> Ensemble:
        agent = Agent(role="Writer", goal="Write", llm=ScriptedChatModel([text("a draft")]))
        return Ensemble(
            tasks=[
                Task(description="Write about {topic}.", expected_output="A line.", agent=agent)
            ],
            review_handler=handler or RunAPIReviewHandler(),
            review_policy="after_last_task",
            listeners=[seen],
        )

    return build


def until(check: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError("the condition never held")


def test_a_review_decided_through_the_run_api_names_its_caller() -> None:
    seen = Seen()
    app = run_api({"writer": reviewed_writer(seen)}, token=TOKENS)
    with (
        hardened_serving(app) as port,
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {TOKENS['ann']}"},
            timeout=WAIT,
        ) as ann,
    ):
        run_id = ann.post("/runs", json={"ensemble": "writer", "inputs": {"topic": "x"}}).json()[
            "run_id"
        ]
        [review] = until(lambda: ann.get(f"/runs/{run_id}/reviews").json()["reviews"])
        edit = {"decision": "edit", "revised_output": "the edited line"}
        assert ann.post(f"/reviews/{review['review_id']}", json=edit).status_code == 200
        until(lambda: ann.get(f"/runs/{run_id}").json()["state"] == "succeeded")
    [event] = seen.decided
    assert (event.decision, event.decided_by) == ("edit", "ann")
    [record] = until(lambda: seen.reviews)
    assert (record.decision, record.decided_by) == ("edit", "ann")


def test_a_tool_call_approved_through_ag_ui_names_its_caller() -> None:
    seen = Seen()

    def crew() -> Ensemble:
        ensemble = mail_crew()
        ensemble.listeners = [seen]
        return ensemble

    headers = {"Authorization": f"Bearer {TOKENS['bob']}"}
    with served(crew, token=TOKENS) as url:
        [interrupt] = post(url, run_input(messages=[user("the picnic")]), headers).interrupts
        done = resume(url, interrupt, {"approved": True}, headers=headers)
    assert done.last.result == "Mail handled."
    [event] = seen.decided
    assert (event.tool_name, event.decision, event.decided_by) == ("send_mail", "continue", "bob")
    [record] = seen.reviews
    assert (record.tool_name, record.decided_by) == ("send_mail", "bob")


def test_a_review_no_caller_decided_names_the_handler() -> None:
    """A timeout decides by the review's rule, not by a caller: the handler is named."""
    from datetime import timedelta

    from agentensemble_review import Review

    seen = Seen()

    def build() -> Ensemble:
        agent = Agent(role="Writer", goal="Write", llm=ScriptedChatModel([text("a draft")]))
        gate = Review.required(timeout=timedelta(milliseconds=100))
        task = Task(description="Write.", expected_output="A line.", agent=agent, review=gate)
        return Ensemble(tasks=[task], review_handler=RunAPIReviewHandler(), listeners=[seen])

    app = run_api({"writer": build}, token=TOKENS)
    with (
        hardened_serving(app) as port,
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {TOKENS['ann']}"},
            timeout=WAIT,
        ) as ann,
    ):
        run_id = ann.post("/runs", json={"ensemble": "writer", "inputs": {}}).json()["run_id"]
        until(lambda: ann.get(f"/runs/{run_id}").json()["state"] == "failed")
    [event] = until(lambda: seen.decided)
    assert (event.decision, event.decided_by) == ("exit_early", "RunAPIReviewHandler")


@pytest.mark.anyio
async def test_a_review_answered_by_an_mcp_client_names_its_caller() -> None:
    """In process (no HTTP request) the caller is the one local client."""
    import mcp_types as types
    from mcp import Client

    async def user(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    seen = Seen()
    server = mcp_server({"writer": reviewed_writer(seen, MCPReviewHandler())})
    async with Client(server, elicitation_callback=user) as client:
        result = await client.call_tool("writer", {"topic": "x"})
    assert not result.is_error
    [event] = seen.decided
    assert (event.decision, event.decided_by) == ("continue", "local")
    [record] = seen.reviews
    assert record.decided_by == "local"
