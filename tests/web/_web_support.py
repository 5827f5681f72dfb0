"""The web console tests' shared scenario: a mailer agent whose every email needs approval.

The scripted model asks to send three emails, one after another, then reports every tool result
it got, so a test can see what each review decision did to the run.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import httpx

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.llm.types import ChatResponse, Message, ToolSpec
from agentensemble.testing import FunctionChatModel, tool_call
from agentensemble_review import Review
from agentensemble_web import WebConsole, WebConsoleServer, WebReviewHandler

RECIPIENTS = ("alice@example.com", "bob@example.com", "carol@example.com")
SENT: list[str] = []


def make_mailer(timeout: float = 60.0) -> object:
    @tool(requires_approval=Review.required(timeout=timedelta(seconds=timeout)))
    def send_email(to: str, subject: str) -> str:
        """Send an email (pretend: it is only recorded).

        Args:
            to: the recipient's address
            subject: the subject line
        """
        SENT.append(to)
        return f"sent to {to}: {subject}"

    return send_email


def _mailer_model(messages: list[Message], tools: list[ToolSpec] | None) -> ChatResponse | str:
    results = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
    if len(results) < len(RECIPIENTS):
        to = RECIPIENTS[len(results)]
        turn = tool_call("send_email", {"to": to, "subject": f"Hello {to.split('@')[0]}"})
        reasoning = f"{to} has not been greeted yet, so I email them next."
        return dataclasses.replace(turn, content=reasoning)
    return "Report:\n" + "\n".join(results)


def mailer_ensemble(
    console: WebConsoleServer, *, timeout: float = 60.0, listener: WebConsole | None = None
) -> Ensemble:
    """One task, three approved-or-not emails, reporting to ``console``."""
    agent = Agent(
        role="Mailer",
        goal="Send the greetings",
        tools=[make_mailer(timeout)],
        llm=FunctionChatModel(_mailer_model),
    )
    task = Task(
        description="Greet alice, bob and carol by email",
        expected_output="what was sent",
        agent=agent,
    )
    return Ensemble(
        tasks=[task],
        listeners=[listener or WebConsole(console.url, console.token)],
        review_handler=WebReviewHandler(console.url, console.token),
    )


def logged_in(console: WebConsoleServer, token: str | None = None) -> tuple[httpx.Client, str]:
    """A client with a browser session (the cookie, and the session key the page keeps from the
    login redirect's fragment) and that session's CSRF token."""
    client = httpx.Client(base_url=console.url, timeout=10.0)
    answer = client.get(f"/login?token={token or console.token}", follow_redirects=False)
    assert answer.status_code == 303, answer.text
    client.headers["X-Session-Key"] = answer.headers["location"].split("#key=", 1)[1]
    csrf = client.get("/api/session").json()["csrf"]
    return client, csrf


def api_client(console: WebConsoleServer) -> httpx.Client:
    """A client reporting in with the token, as ``WebConsole`` does."""
    return httpx.Client(
        base_url=console.url,
        timeout=10.0,
        headers={"Authorization": f"Bearer {console.token}"},
    )


def wait_for_pending(client: httpx.Client, count: int = 1, timeout: float = 20.0) -> list[dict]:
    """The pending reviews once at least ``count`` are there (polls, bounded)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reviews = client.get("/api/reviews").json()["reviews"]
        pending = [r for r in reviews if r["status"] == "pending"]
        if len(pending) >= count:
            return pending
        time.sleep(0.05)
    raise AssertionError(f"no {count} pending review(s) within {timeout} s")
