"""A served MCP run that can pause for the client's user, on both protocol eras.

Handshake-era connections (up to 2025-11-25) can send the client a request in the middle of a
tool call: a review asks by ``elicitation/create`` and waits. On 2026-07-28 a server cannot; it
answers the call with an ``InputRequiredResult`` (the question, and an opaque ``request_state``)
and the client calls again with the answer. ``ServedRun`` keeps the run going in a task of its
own across those calls: a call waits until the run ends (its result) or asks a question (an
``InputRequiredResult``, the run parked under an unguessable state token); the next call with
that token delivers the answer and waits again.

A client may never answer: the run then waits as long as its review's timeout (5 minutes by
default), and one caller parks at most ``MAX_PARKED_PER_CALLER`` runs, counted as each asks, so
a client that asks and walks away again and again cannot hold every place (``MAX_PARKED``) and
fail every other caller's reviews.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from agentensemble.serve.mcp_review import ServedCall

#: Runs parked waiting for an answer, at most (a question past this fails closed).
MAX_PARKED = 256
#: Runs of one caller parked at once, at most (its next question fails closed).
MAX_PARKED_PER_CALLER = 32
QUESTION_KEY = "review"


@dataclass
class _Question:
    message: str
    schema: dict[str, Any]
    state: str  # the run is parked under it from the moment it asks
    answer: asyncio.Future[types.ElicitResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class ServedRun:
    """One run of a served ensemble; ``result_of`` builds the tool result from ``work``."""

    def __init__(
        self, session: Any, request_id: Any, parked: dict[str, ServedRun], caller: str | None = None
    ) -> None:
        self.session = session  # the session of the latest call (progress goes there)
        self._parked = parked
        self._questions: asyncio.Queue[_Question] = asyncio.Queue()
        self._pending: _Question | None = None
        self._task: asyncio.Task[types.CallToolResult] | None = None
        self.call = ServedCall(
            session, request_id, ask=self._ask_for(session, request_id), caller=caller
        )

    def _ask_for(self, session: Any, request_id: Any) -> Callable[..., Awaitable[Any]] | None:
        capabilities = getattr(session, "client_capabilities", None)
        if capabilities is None or getattr(capabilities, "elicitation", None) is None:
            return None  # the client cannot be asked: reviews fail closed
        if getattr(session, "can_send_request", False):

            async def ask_now(message: str, schema: dict[str, Any]) -> Any:
                return await session.elicit_form(message, schema, related_request_id=request_id)

            return ask_now
        return self._ask_by_round_trip

    async def _ask_by_round_trip(self, message: str, schema: dict[str, Any]) -> Any:
        # counted and parked with no await in between: runs asking together all passed a check
        # made before any of them was parked
        if len(self._parked) >= MAX_PARKED:
            raise RuntimeError("too many served runs wait for their clients' answers")
        caller = self.call.caller
        mine = sum(1 for run in self._parked.values() if run.call.caller == caller)
        if mine >= MAX_PARKED_PER_CALLER:
            raise RuntimeError(f"{mine} of this caller's runs already wait for its answers")
        question = _Question(message, schema, secrets.token_urlsafe(24))
        self._parked[question.state] = self
        self._questions.put_nowait(question)
        return await question.answer

    async def start(
        self,
        work: Callable[[], Awaitable[types.CallToolResult]],
        ended: Callable[[Any], None] | None = None,
    ) -> Any:
        """Run ``work`` (the whole run) and wait for its result or its first question;
        ``ended`` is called when the run ends, however it ends."""
        self._task = asyncio.ensure_future(work())
        self._task.add_done_callback(lambda _: self._unpark())
        if ended is not None:
            self._task.add_done_callback(ended)
        return await self._wait()

    async def resume(self, session: Any, responses: Any) -> Any:
        """Deliver the client's answer to the parked question, then wait again."""
        self.session = session
        answer = (responses or {}).get(QUESTION_KEY)
        if not isinstance(answer, types.ElicitResult):
            answer = types.ElicitResult(action="cancel")  # no readable answer: never approval
        if self._pending is not None and not self._pending.answer.done():
            self._pending.answer.set_result(answer)
        self._pending = None
        return await self._wait()

    async def _wait(self) -> Any:
        assert self._task is not None
        asked = asyncio.ensure_future(self._questions.get())
        try:
            await asyncio.wait({self._task, asked}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the call was cancelled: so is the run
            asked.cancel()
            self._task.cancel()
            raise
        if self._task.done():
            asked.cancel()
            return self._task.result()
        self._pending = asked.result()
        state = self._pending.state
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=self._pending.message, requested_schema=self._pending.schema
            )
        )
        return types.InputRequiredResult(
            input_requests={QUESTION_KEY: request}, request_state=state
        )

    def _unpark(self) -> None:
        for state in [key for key, run in self._parked.items() if run is self]:
            del self._parked[state]


__all__ = ["MAX_PARKED", "MAX_PARKED_PER_CALLER", "ServedRun"]
