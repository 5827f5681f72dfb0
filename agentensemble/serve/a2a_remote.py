"""``A2AAgent``: a remote A2A agent used as a tool (the official ``a2a-sdk`` client).

The model sends the remote agent its request as text; the remote answer (its artifacts, else
its last message) comes back as the tool result, and a remote failure (a failed, rejected or
canceled task, an agent asking for input, a transport error, a timeout) is the call's failure,
fed back to the model. Everything the remote sends is untrusted: the card and the answer are
bounded in size and time (every body the HTTP client reads, the card, the answer and each
line of a stream, is cut as it arrives, counted decoded: ``llm/_body_bound.py``, the bound of
a model's answers), control and bidi characters are dropped, secrets redacted. The card
is fetched from ``url`` only, without redirects, and the interface it names must be on ``url``'s
own origin unless listed in ``allowed_urls``: a hostile card cannot send our calls elsewhere.

Listed in ``Ensemble(agents=[...])`` it is a team member (``A2AWorker``) a hierarchical
manager (or a delegating peer) hands work to: the instructions are the request, the answer the
delegation's output, a failure the delegation's failure.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field

from agentensemble.agent import Agent
from agentensemble.errors import UntrustedInputError
from agentensemble.logging import register_secret
from agentensemble.serve._clean import cleaned
from agentensemble.tools.base import AgentTool, ToolResult
from agentensemble.untrusted import parse_json

#: The largest agent card read (bytes).
MAX_CARD_BYTES = 256 * 1024
#: The longest answer handed to the model (characters).
MAX_ANSWER_CHARS = 20_000
CARD_PATH = "/.well-known/agent-card.json"
_NAME = re.compile(r"[^A-Za-z0-9_]+")


class RemoteAgentError(Exception):
    """The remote agent could not answer; the text is safe to show the model."""


def untrusted(text: str, limit: int = MAX_ANSWER_CHARS) -> str:
    """Remote text made safe for the model and the logs (``_clean``: no control, format or
    bidi characters, secrets redacted), bounded."""
    safe = cleaned(text)
    if len(safe) > limit:
        safe = safe[:limit] + f"\n[... truncated: the remote answer exceeded {limit} chars]"
    return safe


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


class A2AAgent(AgentTool):
    """A remote A2A agent at ``url`` as a tool: ``Agent(tools=[A2AAgent("http://...")])``.

    ``name`` defaults to one made from the URL's host (the model sees it); ``token`` is sent
    as ``Authorization: Bearer`` to the agent (and is redacted everywhere). ``allowed_urls``
    lists other origins the agent card may point the calls at; nothing else is followed.
    """

    own_deadline = True  # its ``timeout`` is enforced inside: the policy's is a backstop

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        description: str | None = None,
        token: str | None = None,
        allowed_urls: Iterable[str] = (),
        timeout: float = 300.0,
        max_answer_chars: int = MAX_ANSWER_CHARS,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"A2AAgent needs an http(s) URL; got {url!r}")
        self.url = url
        host = _NAME.sub("_", f"{parts.hostname}_{parts.port or ''}").strip("_")
        self.name = name or f"a2a_{host}"[:64]
        self.description = description or (
            f"Ask the remote agent at {url} (A2A protocol). Pass your whole request as plain "
            "text in `input`; its answer comes back as text."
        )
        self._token = token
        register_secret(token)
        self._allowed = {_origin(url), *(_origin(item) for item in allowed_urls)}
        self.timeout: float = timeout
        self.max_answer_chars = max_answer_chars
        self._card: Any = None
        self._described = description

    def as_team_member(self) -> A2AWorker:
        """This agent as a member of a team (``Ensemble(agents=[...])`` calls it): its role is
        ``name``, its goal ``description`` (what the manager reads to choose a worker)."""
        goal = self._described or f"Answers requests as the remote agent at {self.url}"
        return A2AWorker(role=self.name, goal=goal, remote=self)

    async def answer(self, request: str) -> str:
        """The remote answer (made safe) to ``request``; ``RemoteAgentError`` when it fails."""
        result = await self.aexecute(request)
        if not result.is_success:
            raise RemoteAgentError(result.error_message or "the remote agent failed")
        return result.output

    async def aexecute(self, input: str) -> ToolResult:
        import httpx

        from agentensemble.llm._body_bound import bounding_bodies

        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        try:
            async with httpx.AsyncClient(
                headers=headers,
                timeout=min(self.timeout, 60.0),
                follow_redirects=False,
                event_hooks={"response": [bounding_bodies("the remote agent")]},
            ) as http:
                answer = await asyncio.wait_for(self._ask(http, input), self.timeout)
        except asyncio.TimeoutError:
            return ToolResult.failure(f"the remote agent did not answer within {self.timeout}s")
        except RemoteAgentError as error:
            return ToolResult.failure(untrusted(str(error), 2_000))
        except Exception as error:  # transport and protocol errors: the model may retry
            detail = untrusted(str(error) or type(error).__name__, 2_000)
            return ToolResult.failure(f"calling the remote agent failed: {detail}")
        return ToolResult.success(untrusted(answer, self.max_answer_chars))

    async def _card_of(self, http: Any) -> Any:
        if self._card is not None:
            return self._card
        from a2a.client.card_resolver import parse_agent_card

        from agentensemble.llm._body_bound import BoundedBody

        card_url = self.url.rstrip("/") + CARD_PATH
        async with http.stream("GET", card_url) as response:
            if response.status_code != 200:
                raise RemoteAgentError(
                    f"the agent card at {card_url} answered {response.status_code}"
                )
            coding = response.headers.get("content-encoding", "")
            response.stream = BoundedBody(response.stream, MAX_CARD_BYTES, coding)
            try:  # counted decoded as it arrives: a gzip card never inflates past the bound
                body = await response.aread()
            except UntrustedInputError:
                raise RemoteAgentError(f"the agent card is over {MAX_CARD_BYTES} bytes") from None
        try:
            card = parse_agent_card(parse_json(body, what="the agent card"))
        except Exception as error:
            raise RemoteAgentError(f"unreadable agent card ({type(error).__name__})") from None
        for interface in card.supported_interfaces:
            if _origin(interface.url) not in self._allowed:
                raise RemoteAgentError(
                    f"the agent card points at {interface.url[:200]!r}, another origin than "
                    f"{self.url!r}; add it to A2AAgent(allowed_urls=[...]) to allow it"
                )
        self._card = card
        return card

    async def _ask(self, http: Any, text: str) -> str:
        from a2a.client import ClientConfig, ClientFactory
        from a2a.helpers.proto_helpers import new_text_message
        from a2a.types.a2a_pb2 import Role, SendMessageRequest

        card = await self._card_of(http)
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        request = SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))
        answer = _Answer()
        try:
            async for event in client.send_message(request):
                answer.take(event)
                if answer.text_length() > 4 * self.max_answer_chars:
                    break  # enough: the rest would be cut anyway
        except asyncio.CancelledError:
            if answer.task_id:  # our run was cancelled: ask the remote to stop too
                await _cancel_quietly(client, answer.task_id)
            raise
        return answer.result()


class A2AWorker(Agent):
    """A remote A2A agent as a team member: it answers delegations itself (``ask_remote``),
    with no model, tools or prompt of ours. Made by ``A2AAgent.as_team_member()``."""

    remote: Any = Field(exclude=True, repr=False)

    async def ask_remote(self, instructions: str) -> str:
        answer: str = await self.remote.answer(instructions)
        return answer


async def _cancel_quietly(client: Any, task_id: str) -> None:
    from a2a.types.a2a_pb2 import CancelTaskRequest

    try:
        await asyncio.wait_for(client.cancel_task(CancelTaskRequest(id=task_id)), 5.0)
    except BaseException:  # best effort: the remote may be gone
        return


class _Answer:
    """What the remote said so far: the task's state, its artifacts, its last message."""

    def __init__(self) -> None:
        self.task_id = ""
        self.state = ""
        self.parts: dict[str, list[str]] = {}
        self.message = ""

    def take(self, event: Any) -> None:
        from a2a.types.a2a_pb2 import TaskState

        if event.HasField("message"):
            self.message = _text_of(event.message.parts)
            self.state = self.state or "TASK_STATE_COMPLETED"
        elif event.HasField("task"):
            task = event.task
            self.task_id = task.id
            self.state = TaskState.Name(task.status.state)
            if task.status.HasField("message"):
                self.message = _text_of(task.status.message.parts)
            for artifact in task.artifacts:
                self.parts[artifact.artifact_id] = [_text_of(artifact.parts)]
        elif event.HasField("status_update"):
            update = event.status_update
            self.task_id = update.task_id
            self.state = TaskState.Name(update.status.state)
            if update.status.HasField("message"):
                self.message = _text_of(update.status.message.parts)
        elif event.HasField("artifact_update"):
            update = event.artifact_update
            chunks = self.parts.setdefault(update.artifact.artifact_id, [])
            if not update.append:
                chunks.clear()
            chunks.append(_text_of(update.artifact.parts))

    def text_length(self) -> int:
        return sum(len(chunk) for chunks in self.parts.values() for chunk in chunks)

    def result(self) -> str:
        state = self.state.removeprefix("TASK_STATE_").lower()
        if state == "completed":
            artifacts = ["".join(chunks) for chunks in self.parts.values()]
            return "\n\n".join(text for text in artifacts if text) or self.message
        said = f": {self.message}" if self.message else ""
        if state in ("input_required", "auth_required"):
            raise RemoteAgentError(f"the remote agent needs more input ({state}){said}")
        if state in ("failed", "rejected", "canceled"):
            raise RemoteAgentError(f"the remote agent's task {state}{said}")
        raise RemoteAgentError(f"the remote agent stopped without an answer (state {state or '?'})")


def _text_of(parts: Any) -> str:
    texts: list[str] = []
    for part in parts:
        if part.HasField("text"):
            texts.append(part.text)
        elif part.HasField("data"):
            from a2a.helpers.proto_helpers import get_data_parts

            texts.extend(json.dumps(value) for value in get_data_parts([part]))
    return "\n".join(texts)


__all__ = ["MAX_ANSWER_CHARS", "A2AAgent", "A2AWorker", "RemoteAgentError", "untrusted"]
