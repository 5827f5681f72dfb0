"""What the framework hands to tools while they run: review handler, metrics, logger, task.

The context lives in a ContextVar, so concurrent runs sharing one tool object each see their
own, and it reaches worker threads (which run with a copy of the context variables) and nested
pipeline steps without any plumbing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from contextvars import ContextVar
from dataclasses import field
from typing import Any

from agentensemble._base.dataclass import dataclass
from agentensemble.logging import get_logger
from agentensemble.tools.metrics import ToolMetricsRegistry

_log = get_logger()


def _shared_logger() -> Any:
    """One logger for every context: a fresh one per run rebuilt its bound logger (its
    processors) at each run's first log call."""
    return _log


@dataclass
class ToolContext:
    """Run-wide services for tools.

    ``review_handler`` answers approval requests (None: approvals cannot be asked).
    ``loop`` is the event loop running the agent; ``use_tool_context`` captures it, so sync tool
    code in a worker thread can run async work (a handler's ``areview``) on it.
    ``emit`` delivers run events (tool reviews asked and decided) to the run's listeners.
    ``stopped`` is set when the run stops while calls of the turn are still out (ExitEarly, a
    review error, cancellation): an approval answered after that approves nothing.
    ``model`` is the agent's model.
    """

    review_handler: Any | None = None
    metrics: ToolMetricsRegistry = field(default_factory=ToolMetricsRegistry)
    logger: Any = field(default_factory=_shared_logger)
    task_description: str = ""
    agent_role: str = ""
    loop: asyncio.AbstractEventLoop | None = None
    emit: Callable[[Any], None] | None = None
    stopped: threading.Event = field(default_factory=threading.Event)
    model: Any | None = None
    """The agent's model (an MCP server's sampling request is answered by it when the server
    names no ``sampling_model``); None outside an agent's tool turn."""
    tool_slots: Any = None
    """The run's ``_calls.ToolSlots`` (bounds on bodies at once), for calls a tool makes
    itself: a pipeline's steps; None outside an agent's tool turn."""

    def emit_event(self, event: Any) -> None:
        """Send ``event`` to the run's listeners, on the loop's thread when there is one."""
        if self.emit is None:
            return
        loop = self.loop
        if loop is not None and loop.is_running() and not _in_loop(loop):
            loop.call_soon_threadsafe(self.emit, event)
        else:
            self.emit(event)


def _in_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


_current: ContextVar[ToolContext | None] = ContextVar("agentensemble_tool_context", default=None)


class _Using:
    """The block of ``use_tool_context`` (a class, not a generator: entered on every tool turn,
    where ``contextlib.contextmanager``'s generator and wrapper cost more than the work)."""

    __slots__ = ("_context", "_token")

    def __init__(self, context: ToolContext) -> None:
        self._context = context

    def __enter__(self) -> ToolContext:
        context = self._context
        if context.loop is None:
            with suppress(RuntimeError):  # no running loop: sync caller
                context = dataclasses.replace(context, loop=asyncio.get_running_loop())
        self._token = _current.set(context)
        return context

    def __exit__(self, *_: object) -> None:
        _current.reset(self._token)


def use_tool_context(context: ToolContext) -> AbstractContextManager[ToolContext]:
    """Make ``context`` the current one inside the block (capturing the running loop, if any)."""
    return _Using(context)


def current_tool_context() -> ToolContext:
    """The context set by the framework, or a fresh default one (no review handler)."""
    context = _current.get()
    return context if context is not None else ToolContext()


def in_tool_call() -> bool:
    """Whether the code runs inside a tool call (a delegated agent, a nested ensemble)."""
    return _current.get() is not None


__all__ = ["ToolContext", "current_tool_context", "in_tool_call", "use_tool_context"]
