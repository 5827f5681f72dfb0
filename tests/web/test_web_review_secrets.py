"""Attack: a model puts secrets into a tool's arguments. The review card the console shows is
redacted like the run's events (the ``***`` tells the reviewer a secret is leaving), and the
approved call still runs with what the model sent."""

from __future__ import annotations

import json
import threading
from contextlib import closing
from datetime import timedelta
from typing import Any

from _web_support import logged_in, wait_for_pending

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.logging import register_secret
from agentensemble.testing import FunctionChatModel, tool_call
from agentensemble_review import Review
from agentensemble_web import WebConsole, WebConsoleServer, WebReviewHandler

REGISTERED = "registered-web-card-secret-77"
KEY = "sk-live-webcard0123456789abc"
PASSWORD = "db-Passw0rd-on-the-card"
SENT: list[str] = []


@tool(requires_approval=Review.required(timeout=timedelta(seconds=60)))
def post_message(text: str) -> str:
    """Post a message to the team channel.

    Args:
        text: the message
    """
    SENT.append(text)
    return "posted"


def _model(messages: list[Any], tools: Any) -> Any:
    if not any(m.get("role") == "tool" for m in messages):
        text = f"creds: {REGISTERED} {KEY} postgresql://app:{PASSWORD}@db/prod"
        return tool_call("post_message", {"text": text})
    return "done"


def test_the_review_card_shows_secrets_in_tool_arguments_as_stars(
    console: WebConsoleServer,
) -> None:
    register_secret(REGISTERED)
    SENT.clear()
    agent = Agent(role="Poster", goal="Post", tools=[post_message], llm=FunctionChatModel(_model))
    listener = WebConsole(console.url, console.token)
    ensemble = Ensemble(
        tasks=[Task(description="Post the credentials", agent=agent)],
        listeners=[listener],
        review_handler=WebReviewHandler(console.url, console.token),
    )
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(output=ensemble.run()), daemon=True)
    thread.start()
    browser, csrf = logged_in(console)
    with closing(browser):
        (review,) = wait_for_pending(browser)
        card = json.dumps(review)
        assert "creds: ***" in card and "postgresql://app:***@db/prod" in card
        for secret in (REGISTERED, KEY, PASSWORD):
            assert secret not in card
        answer = browser.post(
            f"/api/reviews/{review['id']}/decision",
            json={"decision": "continue"},
            headers={"X-CSRF-Token": csrf, "Origin": console.url},
        )
        assert answer.status_code == 200, answer.text
        thread.join(timeout=30)
        assert not thread.is_alive() and "output" in box
        assert SENT and REGISTERED in SENT[0]  # approving runs the call the model asked for
        assert listener.flush(10)
        events = json.dumps(browser.get(f"/api/runs/{box['output'].run_id}").json())
    for secret in (REGISTERED, KEY, PASSWORD):
        assert secret not in events
