"""A tool's own approval settings reach the reviewer: the webhook is told the deadline that
actually applies to that tool, not the five-minute default."""

from __future__ import annotations

import json
from datetime import timedelta

from _review_support import Seen, adhoc_server, json_reply

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.testing import ScriptedChatModel, tool_call
from agentensemble_review import OnTimeoutAction, Review, WebhookReviewHandler

RAN: list[str] = []


@tool(requires_approval=Review.required(timeout=timedelta(seconds=42), on_timeout="continue"))
def deploy(service: str) -> str:
    """Deploy a service."""
    RAN.append(service)
    return f"deployed {service}"


@tool(requires_approval=True)
def restart(service: str) -> str:
    """Restart a service."""
    RAN.append(service)
    return f"restarted {service}"


def test_the_webhook_payload_carries_each_tools_own_deadline_and_on_timeout() -> None:
    def respond(seen: Seen) -> tuple[int, dict[str, str], bytes]:
        return json_reply(200, {"decision": "continue"})

    model = ScriptedChatModel(
        [tool_call("deploy", {"service": "api"}), tool_call("restart", {"service": "db"}), "ok"]
    )
    with adhoc_server(respond) as (url, seen):
        agent = Agent(role="Ops", goal="Ship", tools=[deploy, restart], llm=model)
        Ensemble(
            tasks=[Task(description="Ship it", agent=agent)],
            review_handler=WebhookReviewHandler(url),
        ).run()
    bodies = [json.loads(request.body) for request in seen if request.method == "POST"]
    by_tool = {body["tool_name"]: body for body in bodies}
    assert by_tool["deploy"]["timeout_seconds"] == 42
    assert by_tool["deploy"]["on_timeout"] == OnTimeoutAction.CONTINUE.value
    assert by_tool["restart"]["timeout_seconds"] == 300  # the default, where none was set
    assert by_tool["deploy"]["output"] == '{"service": "api"}'
    assert RAN == ["api", "db"]
