"""``review: ag-ui``: a served run's review becomes an AG-UI interrupt its front end answers.

The handler reads the served run from a context variable set for the run's task
(``current_run``). It fails closed like every review channel: outside a served AG-UI run the
decision is ``ExitEarly``; a review nobody answers ends with the request's own timeout
(``on_timeout``, stop by default); an answer is applied only when it is clear.

An answer is a ``ResumeEntry`` for the interrupt (see ``decision``): ``status: "cancelled"``
rejects; ``status: "resolved"`` with ``payload`` ``{"approved": true}`` approves,
``{"approved": true, "editedArgs": {...}}`` approves a tool call with edited arguments (checked
against the tool's JSON schema), ``{"approved": true, "editedOutput": "..."}`` approves a task
review with edited text, ``{"approved": false, "reason": "..."}`` rejects. ``approved`` must be
a JSON boolean. An answer that cannot be applied is refused (the resume request fails with the
reason) and the interrupt stays open, so nothing is approved by a malformed answer.

Importing this module is cheap (no ``ag_ui``): the crew file loader names the handler.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from agentensemble.serve._clean import cleaned
from agentensemble.serve._shape import MAX_ARGUMENT_CHARS, BadArguments

#: The longest text shown in an interrupt's message or metadata (characters).
MAX_SHOWN_CHARS = 8_000

TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "run the tool call (true) or not"},
        "editedArgs": {
            "type": "object",
            "description": "with approved: the arguments the tool runs with instead",
        },
        "reason": {"type": "string", "description": "with approved false: why"},
    },
    "required": ["approved"],
}
TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "let the run go on (true) or stop it"},
        "editedOutput": {
            "type": "string",
            "description": "with approved: the text that replaces the task's output",
        },
        "reason": {"type": "string", "description": "with approved false: why"},
    },
    "required": ["approved"],
}


def shown(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """Text safe to show a person: hidden characters dropped, secrets redacted, bounded."""
    safe = cleaned(text)
    return safe if len(safe) <= limit else safe[: limit - 16] + "\n... (truncated)"


@dataclass
class PendingReview:
    """One review waiting for the front end: the request, the interrupt's id, the tool call it
    concerns and the tool's argument schema (when known), and the future its answer sets."""

    request: Any
    future: asyncio.Future[Any]
    tool_call_id: str | None = None
    tool_schema: dict[str, Any] | None = None
    id: str = field(default_factory=lambda: f"review-{uuid.uuid4()}")

    @property
    def is_tool_call(self) -> bool:
        return bool(self.request.tool_name) and self.request.timing.value == "during_execution"

    def interrupt(self, ag: Any) -> Any:
        """The AG-UI ``Interrupt`` for this review."""
        from agentensemble.serve._ag_ui_events import shown_id  # the id the stream showed

        request = self.request
        what = f"the call to tool {request.tool_name!r}" if self.is_tool_call else "the task"
        lines = [shown(request.prompt, 1_000) if request.prompt else f"Approve {what}?"]
        if request.output:
            lines.append(shown(request.output))
        expires = None
        seconds = request.timeout_seconds
        if seconds is not None:
            at = datetime.now(timezone.utc) + timedelta(seconds=seconds)
            expires = at.isoformat(timespec="seconds").replace("+00:00", "Z")
        return ag.Interrupt(
            id=self.id,
            reason="tool_approval" if self.is_tool_call else "task_review",
            message="\n\n".join(lines),
            tool_call_id=None if self.tool_call_id is None else shown_id(self.tool_call_id),
            response_schema=dict(TOOL_SCHEMA if self.is_tool_call else TASK_SCHEMA),
            expires_at=expires,
            metadata={
                "timing": request.timing.value,
                "toolName": request.tool_name,
                "task": shown(request.task_description, 1_000),
                "argumentsSchema": self.tool_schema,
            },
        )

    def view(self) -> dict[str, Any]:
        """This review in the run's state."""
        return {
            "id": self.id,
            "timing": self.request.timing.value,
            "toolName": self.request.tool_name,
            "status": "pending",
        }


def decision(pending: PendingReview, entry: Any, who: str) -> tuple[Any, dict[str, Any]]:
    """The review decision a ``ResumeEntry`` gives (see the module docstring) and its record for
    the run's state; ``BadArguments`` naming what is wrong when it cannot be applied."""
    from agentensemble_review import Continue, Edit, ExitEarly

    where = f"resume entry for {pending.id}"
    if entry.status == "cancelled":
        cancelled = ExitEarly(f"cancelled by the AG-UI user ({who})", decided_by=who)
        return cancelled, _record("rejected", who)
    payload = entry.payload
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise BadArguments(
            f"{where}: payload must be an object with a boolean 'approved' "
            '(e.g. {"approved": true}); nothing was decided'
        )
    reason = payload.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadArguments(f"{where}: 'reason' must be a string")
    if not payload["approved"]:
        why = reason[:MAX_SHOWN_CHARS] if reason else f"rejected by the AG-UI user ({who})"
        return ExitEarly(why, decided_by=who), _record("rejected", who)
    arguments, output = payload.get("editedArgs"), payload.get("editedOutput")
    if arguments is not None:
        if not pending.is_tool_call:
            raise BadArguments(f"{where}: a task review takes editedOutput, not editedArgs")
        edited = _checked_arguments(pending, arguments, where)
        return Edit(edited, decided_by=who), _record("edited", who)
    if output is not None:
        if pending.is_tool_call:
            raise BadArguments(f"{where}: a tool call takes editedArgs, not editedOutput")
        if not isinstance(output, str) or not output or len(output) > MAX_ARGUMENT_CHARS:
            raise BadArguments(
                f"{where}: editedOutput must be a non-empty text of at most "
                f"{MAX_ARGUMENT_CHARS} characters"
            )
        return Edit(output, decided_by=who), _record("edited", who)
    return Continue(decided_by=who), _record("approved", who)


def _record(outcome: str, who: str) -> dict[str, Any]:
    return {"status": outcome, "decidedBy": who}


def _checked_arguments(pending: PendingReview, arguments: Any, where: str) -> str:
    if not isinstance(arguments, dict):
        raise BadArguments(
            f"{where}: editedArgs must be an object of the tool's arguments, "
            f"got {type(arguments).__name__}"
        )
    if pending.tool_schema is not None:
        from agentensemble.mcp._schema_check import schema_errors, schema_validator

        problems = schema_errors(schema_validator(pending.tool_schema), arguments)
        if problems:
            shown_problems = "; ".join(problems[:5])
            raise BadArguments(
                f"{where}: editedArgs do not fit tool {pending.request.tool_name!r}'s schema: "
                f"{shown_problems}"
            )
    text = json.dumps(arguments, ensure_ascii=False)
    if len(text) > MAX_ARGUMENT_CHARS:  # bounded as editedOutput and every input text
        raise BadArguments(
            f"{where}: editedArgs are {len(text)} characters as JSON; the limit is "
            f"{MAX_ARGUMENT_CHARS}"
        )
    return text


class ServedRun:
    """What the handler needs of a served run (``_ag_ui_runs.ServedRun`` implements it)."""

    async def ask(self, request: Any) -> Any:  # pragma: no cover - an interface
        raise NotImplementedError


current_run: contextvars.ContextVar[ServedRun | None] = contextvars.ContextVar(
    "agentensemble_served_ag_ui_run", default=None
)


class AGUIReviewHandler:
    """Asks the front end of the served AG-UI run (``review: ag-ui``): an interrupt."""

    async def areview(self, request: Any) -> Any:
        from agentensemble_review import ExitEarly

        run = current_run.get()
        if run is None:
            return ExitEarly("review: ag-ui asks the front end of a served AG-UI run: none here")
        return await run.ask(request)

    def __repr__(self) -> str:
        return "AGUIReviewHandler()"


__all__ = [
    "TASK_SCHEMA",
    "TOOL_SCHEMA",
    "AGUIReviewHandler",
    "PendingReview",
    "ServedRun",
    "current_run",
    "decision",
    "shown",
]
