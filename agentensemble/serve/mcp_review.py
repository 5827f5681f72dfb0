"""``review: mcp``: a served ensemble asks the calling MCP client's user, through elicitation.

The handler reads the call it serves from a context variable set by the MCP server for each
tool call. It fails closed: outside a served call, with a client that does not support
elicitation (or a transport that cannot carry a request back to the client), or when the user
declines, cancels or sends an unreadable answer, the decision is ``ExitEarly`` with a reason.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agentensemble.serve._clean import cleaned

#: The longest text shown to the client's user in one question.
MAX_SHOWN_CHARS = 8_000
_CUT = "\n... (truncated)"


@dataclass(frozen=True)
class ServedCall:
    """The MCP request a served run belongs to: its session, its request id, how to ask its
    client's user (``ask(message, schema) -> ElicitResult``; None when the client cannot) and
    who called (its token's name or address: the decider its reviews name)."""

    session: Any
    request_id: Any
    ask: Callable[[str, dict[str, Any]], Awaitable[Any]] | None = None
    caller: str | None = None


current_call: contextvars.ContextVar[ServedCall | None] = contextvars.ContextVar(
    "agentensemble_served_mcp_call", default=None
)

DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "enum": ["approve", "edit", "stop"],
            "description": "approve as it is, approve with your edit, or stop the run",
        },
        "revised_output": {
            "type": "string",
            "title": "Edited text",
            "description": "with 'edit': the text that replaces the output (or tool input)",
        },
        "reason": {"type": "string", "title": "Reason", "description": "with 'stop': why"},
    },
    "required": ["decision"],
}


def shown(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """Untrusted text made safe to show (``_clean``: no character that drives a terminal or
    hides what is shown, secrets redacted), then bounded to ``limit`` characters."""
    safe = cleaned(text)
    if len(safe) > limit:
        safe = safe[: max(limit - len(_CUT), 0)] + _CUT
    return safe


class MCPReviewHandler:
    """Asks the user of the MCP client that called the served tool (``review: mcp``)."""

    async def areview(self, request: Any) -> Any:
        from agentensemble_review import Continue, Edit, ExitEarly

        call = current_call.get()
        if call is None:
            return ExitEarly("review: mcp asks the MCP client of a served call; there is none")
        if call.ask is None:
            return ExitEarly(
                "review: mcp needs a client that supports MCP elicitation; this one does not, "
                "so the gated step was refused"
            )
        try:
            result = await call.ask(_question(request), DECISION_SCHEMA)
        except Exception as error:  # a broken or vanished client never approves
            return ExitEarly(f"review: mcp could not ask the client ({type(error).__name__})")
        content = result.content or {}
        decision = content.get("decision")
        who = call.caller  # the ReviewDecided event and the trace name the caller
        if result.action != "accept":
            return ExitEarly(f"the MCP client's user answered {result.action!r}", decided_by=who)
        if decision == "approve":
            return Continue(decided_by=who)
        revised = content.get("revised_output")
        if decision == "edit" and isinstance(revised, str) and revised:
            return Edit(revised, decided_by=who)
        if decision == "stop":
            reason = content.get("reason")
            why = str(reason) if reason else "stopped by the MCP client's user"
            return ExitEarly(why, decided_by=who)
        return ExitEarly(f"unreadable answer from the MCP client: decision={decision!r}")

    def __repr__(self) -> str:
        return "MCPReviewHandler()"


def _question(request: Any) -> str:
    timing = getattr(request.timing, "value", request.timing)
    what = f"tool {request.tool_name!r}" if request.tool_name else "the task's output"
    lines = [f"Review ({timing}): approve {what}?"]
    if request.prompt:
        lines.append(shown(str(request.prompt), 1_000))
    lines.append(f"Task: {shown(request.task_description, 1_000)}")
    if request.output:
        lines.append(f"To review:\n{shown(request.output)}")
    return "\n\n".join(lines)


__all__ = ["MCPReviewHandler", "ServedCall", "current_call", "shown"]
