"""The policy of one tool call, whatever the tool's shape.

What is decided once, when a tool is resolved (its ``CallPlan``); what stops the run instead of
failing the call; what the model sees for an exception; how a finished call is logged and
counted. The resolver's ``ExecutableTool``, instrumented tools and pipeline steps all follow it.
"""

from __future__ import annotations

import logging

from agentensemble._dataclass import dataclass
from agentensemble._interrupts import escaped_message
from agentensemble.errors import ConfigurationError, ExitEarlyError, ToolExecutionError
from agentensemble.tools import _approval
from agentensemble.tools._tool_errors import model_text, warn_tool_exception
from agentensemble.tools.base import ToolResult
from agentensemble.tools.context import ToolContext
from agentensemble.tools.metrics import CallOutcome

LOG_PREVIEW_CHARS = 200


@dataclass(frozen=True)
class CallPlan:
    """How every call of one resolved tool runs, fixed when the tool is resolved: the executor
    reads this, never the tool. (The place for per-tool call policy: a timeout, retries, a
    bound on calls at once.)"""

    instrumented: bool
    """The tool's own ``execute`` gates, times, logs and counts each call (an
    ``InstrumentedTool``: ``@tool`` functions, typed and abstract tools, pipelines, MCP tools);
    else ``ExecutableTool`` does it for a plain ``AgentTool``."""
    declares_approval: bool
    """Its ``requires_approval`` says some call asks, so a review handler is needed."""
    can_ask: bool
    """Some call may ask a reviewer (a declared rule, or ``needs_approval`` overridden), so
    the call notes a reviewer's edit of its input; False: no call ever asks."""
    body_in_thread: bool
    """A sync ``@tool`` function: its body runs in a worker thread, so a call runs nothing but
    the framework's code on the event loop."""
    makes_own_steps: bool
    """Its work is steps of its own (a delegation: the worker's model and tool calls), which a
    durable run checkpoints one by one instead of the call as one step."""

    @property
    def runs_alone(self) -> bool:
        """A call alone in its turn needs no task of its own (see ``tool_turn.run_alone``): no
        user code runs on the loop, and no reviewer is asked there."""
        return self.body_in_thread and not self.can_ask

    def own_steps(self, handler_waits: bool) -> bool:
        """Whether a durable run checkpoints this call's own steps rather than the call: it
        makes steps of its own, or it declares approval and the run's review handler waits
        in the run itself (``durable_itself``, such as DurableReviewHandler)."""
        return self.makes_own_steps or (self.declares_approval and handler_waits)


UNKNOWN_TOOL = CallPlan(
    instrumented=False,
    declares_approval=False,
    can_ask=False,
    body_in_thread=True,
    makes_own_steps=False,
)
"""The plan of a call to a tool the agent does not have: answered by the framework alone."""


def preview(text: str, limit: int = LOG_PREVIEW_CHARS) -> str:
    """``text`` cut to ``limit`` characters for a log line."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stops_the_run(exc: BaseException) -> bool:
    """Errors that stop the run instead of becoming a failed tool call: ExitEarlyError,
    ConfigurationError and the review package's errors (the approval machinery itself failed).
    """
    return isinstance(exc, (ExitEarlyError, ConfigurationError)) or _approval.is_review_error(exc)


def exception_message(exc: BaseException) -> str:
    """What the model sees for an exception (API: ``Error: <message>``): an unexpected one with
    its type, ``KeyError: 'O-9'``; a ToolExecutionError's own message. The traceback goes to the
    WARNING log. A BaseException that is no Exception (SystemExit, ...) is named: "raised
    SystemExit: 2". See ``_tool_errors``.
    """
    if not isinstance(exc, Exception):
        return escaped_message(exc)
    return model_text(exc)


def log_call(
    context: ToolContext,
    name: str,
    raw: str,
    result: ToolResult,
    duration: float,
    exc: BaseException | None = None,
) -> CallOutcome:
    """Log one finished call and count it in the run's registry; returns its outcome.

    INFO ``name(input) -> output`` (each cut to 200 characters) with the duration; WARNING
    ``name(input) -> Error: message`` on failure (with the traceback for unexpected
    exceptions); DEBUG with the full input and output.
    """
    duration_ms = round(duration * 1000, 1)
    if result.is_success:
        outcome = CallOutcome.SUCCESS
        enabled = getattr(context.logger, "isEnabledFor", None)  # the line is built only if
        if not callable(enabled) or enabled(logging.INFO):  # someone listens: most runs, nobody
            context.logger.info(
                f"{name}({preview(raw)}) -> {preview(result.output)}",
                tool=name,
                duration_ms=duration_ms,
                success=True,
            )
        if not callable(enabled) or enabled(logging.DEBUG):
            context.logger.debug("tool call", tool=name, input=raw, output=result.output)
    else:
        unexpected = exc is not None and not isinstance(exc, ToolExecutionError)
        outcome = CallOutcome.ERROR if unexpected else CallOutcome.FAILURE
        error = result.error_message or ""
        if exc is not None and unexpected:
            warn_tool_exception(name, exc)
        context.logger.warning(
            f"{name}({preview(raw)}) -> Error: {preview(error)}",
            tool=name,
            duration_ms=duration_ms,
            success=False,
            exc_info=exc if unexpected else None,
        )
        context.logger.debug("tool call", tool=name, input=raw, error=error)
    context.metrics.record(name, outcome, duration)
    return outcome


__all__ = [
    "UNKNOWN_TOOL",
    "CallPlan",
    "exception_message",
    "log_call",
    "preview",
    "stops_the_run",
]
