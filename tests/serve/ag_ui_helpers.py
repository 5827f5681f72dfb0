"""Helpers for the AG-UI tests: a served AG-UI app on a real 127.0.0.1 port, a run posted over
HTTP with its server-sent events parsed by the ``ag-ui-protocol`` package's own types, and the
run's state rebuilt from its snapshot and patches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from ag_ui.core import Event
from pydantic import TypeAdapter
from serve_helpers import hardened_serving

from agentensemble import Agent, Ensemble, Task, tool
from agentensemble.serve import AGUIReviewHandler, ag_ui_app
from agentensemble.testing import ScriptedChatModel, tool_call

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
WAIT = 30.0


@dataclass
class Answer:
    """One POST's answer: its status, its AG-UI events (parsed), or its JSON error."""

    status: int
    events: list[Any] = field(default_factory=list)
    error: str = ""

    @property
    def types(self) -> list[str]:
        return [event.type.value for event in self.events]

    def of(self, kind: str) -> list[Any]:
        return [event for event in self.events if event.type.value == kind]

    @property
    def text(self) -> str:
        return "".join(event.delta for event in self.of("TEXT_MESSAGE_CONTENT"))

    @property
    def last(self) -> Any:
        return self.events[-1]

    @property
    def interrupts(self) -> list[Any]:
        outcome = self.last.outcome
        assert outcome is not None and outcome.type == "interrupt", self.types
        return list(outcome.interrupts)

    @property
    def state(self) -> dict[str, Any]:
        """The run's state as a front end holds it: the snapshot with every patch applied."""
        state: dict[str, Any] = {}
        for event in self.events:
            if event.type.value == "STATE_SNAPSHOT":
                state = json.loads(json.dumps(event.snapshot))
            elif event.type.value == "STATE_DELTA":
                for op in event.delta:
                    apply_op(state, op.model_dump(mode="json", by_alias=True))
        return state


def apply_op(state: dict[str, Any], op: dict[str, Any]) -> None:
    """One JSON Patch ``add`` or ``replace`` (the ones the app sends)."""
    assert op["op"] in ("add", "replace"), op
    *parents, last = op["path"].split("/")[1:]
    node: Any = state
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node.append(op["value"]) if last == "-" else node.__setitem__(int(last), op["value"])
    else:
        node[last] = op["value"]


def run_input(
    thread: str = "t1", run: str = "r1", *, messages: Any = None, **more: Any
) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": messages or [], **more}


def user(text: str, number: int = 1) -> dict[str, Any]:
    return {"id": f"m{number}", "role": "user", "content": text}


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> Answer:
    """POST ``body`` (JSON, or raw bytes) and read the whole answer."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", "Accept": "text/event-stream", **(headers or {})}
    with httpx.stream("POST", url, content=content, headers=sent, timeout=WAIT) as answer:
        if answer.status_code != 200:
            answer.read()
            return Answer(answer.status_code, error=answer.json().get("error", ""))
        assert answer.headers["content-type"].startswith("text/event-stream")
        lines = [line[6:] for line in answer.iter_lines() if line.startswith("data: ")]
    return Answer(200, [EVENTS.validate_json(line) for line in lines])


def resume(url: str, interrupt: Any, payload: Any, *, run: str = "r2", **more: Any) -> Answer:
    entry = {"interruptId": interrupt.id, "status": "resolved", "payload": payload}
    return post(url, run_input(run=run, resume=[entry]), **more)


@contextmanager
def served(ensemble: Any, **settings: Any) -> Iterator[str]:
    """``ensemble`` (or a factory) as an AG-UI app on a free 127.0.0.1 port: its URL."""
    with hardened_serving(ag_ui_app(ensemble, **settings)) as port:
        yield f"http://127.0.0.1:{port}/"


@tool(requires_approval=True)
def send_mail(to: str, body: str) -> str:
    """Send a mail to someone."""
    return f"sent to {to}: {body}"


def mail_crew(*replies: Any, model: ScriptedChatModel | None = None) -> Ensemble:
    """One task whose agent sends a mail (an approval-gated tool), then answers."""
    llm = model or ScriptedChatModel(
        list(replies)
        or [tool_call("send_mail", {"to": "ann@example.com", "body": "hello"}), "Mail handled."]
    )
    agent = Agent(role="Assistant", goal="Help", llm=llm, tools=[send_mail])
    task = Task(description="Mail Ann about {topic}", expected_output="A line", agent=agent)
    return Ensemble(tasks=[task], review_handler=AGUIReviewHandler())


def two_tasks(model: ScriptedChatModel) -> Ensemble:
    agent = Agent(role="Writer", goal="Write plainly", llm=model)
    research = Task(description="Research {topic}", expected_output="Facts", agent=agent)
    write = Task(
        description="Write about {topic}", expected_output="A line", agent=agent, context=[research]
    )
    return Ensemble(tasks=[research, write])


__all__ = [
    "EVENTS",
    "Answer",
    "apply_op",
    "mail_crew",
    "post",
    "resume",
    "run_input",
    "send_mail",
    "served",
    "two_tasks",
    "user",
]
