"""The policy of one tool call, whatever the tool's shape.

What is decided once, when a tool is resolved (its ``CallPlan``); what stops the run instead of
failing the call; what the model sees for an exception; how a finished call is logged and
counted. The resolver's ``ExecutableTool``, instrumented tools and pipeline steps all follow it.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from datetime import timedelta
from typing import Any, TypeVar

from agentensemble._base.dataclass import dataclass
from agentensemble._base.interrupts import escaped_message
from agentensemble.errors import ConfigurationError, ExitEarlyError, ToolExecutionError
from agentensemble.tools import _approval
from agentensemble.tools._tool_errors import model_text, warn_tool_exception
from agentensemble.tools.base import ToolResult
from agentensemble.tools.context import ToolContext
from agentensemble.tools.metrics import CallOutcome
from agentensemble.tools.policy import ToolPolicy, layered, policy_problem

LOG_PREVIEW_CHARS = 200
T = TypeVar("T")

#: The wait before the n-th retry of a tool body: ``RETRY_BACKOFF * 2 ** (n - 1)`` seconds, at
#: most ``RETRY_MAX_BACKOFF``, less a random part of up to half (calls failing together spread).
RETRY_BACKOFF = 0.5
RETRY_MAX_BACKOFF = 10.0
#: For a tool that enforces its own ``timeout`` (``own_deadline = True``: the built-in
#: ``HttpFetch``, ``RunCommand``, ``A2AAgent``), the policy's deadline comes this much later, a
#: backstop: the tool's own message (what it read, what it killed) is the one the model sees.
OWN_DEADLINE_GRACE = 2.0


@dataclass(frozen=True)
class CallPolicy:
    """The execution policy one tool's calls run under, decided from the tool's own settings
    (``@tool(timeout=, retries=, max_concurrency=)``, the same ``AgentTool`` attributes) over
    the defaults around it (``ToolPolicy``: its MCP server's, its agent's, its ensemble's). It
    governs the tool's body, after any approval: waiting for a reviewer is never timed,
    retried or queued."""

    name: str
    timeout: float | None = None
    """Seconds one run of the body may take; past them the call fails with "timed out after N
    s" (an async body is cancelled; a sync body is abandoned in its daemon thread)."""
    retries: int = 0
    """Runs of the body again after it raised unexpectedly or timed out, with backoff. Never
    for a tool that declares approval: a new run would act on a decision made for the first."""
    max_concurrency: int | None = None
    """Bodies of this tool running at once across the run (every agent, task and branch)."""
    gated: bool = False
    """The tool declares approval: ``retries`` do not apply."""


def own_policy(tool: object, name: str) -> tuple[ToolPolicy | None, bool]:
    """The settings ``tool`` makes for itself (None: none), and whether it keeps its own
    deadline (``own_deadline = True``). ``ValueError`` naming the tool and the setting that
    cannot work (a timeout of 0, negative retries, a concurrency of 0).

    ``timeout`` is a common attribute name, so it is read with care: a ``timedelta`` counts as
    its seconds; a tool that keeps its own deadline has it honoured only as a number (a
    backstop ``OWN_DEADLINE_GRACE`` later), anything else is the tool's own business; any
    other tool whose ``timeout`` is no number of seconds is refused, the message saying how
    to keep it its own."""
    own_deadline = getattr(tool, "own_deadline", False) is True
    timeout = getattr(tool, "timeout", None)
    if isinstance(timeout, timedelta):
        timeout = timeout.total_seconds()
    if own_deadline and policy_problem("timeout", timeout):
        timeout = None  # the tool's own meaning: not the framework's to read
    retries = getattr(tool, "retries", None)
    concurrency = getattr(tool, "max_concurrency", None)
    if timeout is None and retries is None and concurrency is None:
        return None, own_deadline
    problem = policy_problem("timeout", timeout)
    if problem:  # (never a @tool function's: the decorator refused it already)
        raise ValueError(
            f"tool {name!r} ({type(tool).__name__}): {problem}. The framework reads a tool's "
            "`timeout` attribute as its time limit in seconds; if this one means something of "
            "the tool's own, set `own_deadline = True` on its class (a number of seconds is "
            "then only a backstop, anything else is left alone), or rename it"
        )
    check_policy(name, timeout, retries, concurrency)
    if timeout is not None and own_deadline:
        timeout = float(timeout) + OWN_DEADLINE_GRACE
    return ToolPolicy(timeout=timeout, retries=retries, max_concurrency=concurrency), own_deadline


def decided(name: str, policy: ToolPolicy | None, *, gated: bool) -> CallPolicy | None:
    """The ``CallPolicy`` of ``policy`` for the tool ``name`` (None: nothing set)."""
    if policy is None or policy.is_empty:
        return None
    return CallPolicy(name, policy.timeout, policy.retries or 0, policy.max_concurrency, gated)


def check_policy(name: str, timeout: Any, retries: Any, max_concurrency: Any) -> None:
    """``ValueError`` naming the tool and the first setting that cannot work."""
    for field, value in (
        ("timeout", timeout),
        ("retries", retries),
        ("max_concurrency", max_concurrency),
    ):
        problem = policy_problem(field, value)
        if problem:
            raise ValueError(f"tool {name!r}: {problem}")


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
    policy: CallPolicy | None = None
    """Its own timeout, retries and bound on bodies at once (None: none set)."""
    own: ToolPolicy | None = None
    """The settings it makes for itself, which ``policy`` decides alone (see ``under``)."""
    own_deadline: bool = False
    """It enforces its own ``timeout``: a default's timeout never applies to it."""

    @property
    def takes_defaults(self) -> bool:
        """An agent's or ensemble's ``tool_policy`` applies to it: not to a delegation (its
        work is a worker's whole task, of steps of its own)."""
        return not self.makes_own_steps

    def under(self, name: str, default: ToolPolicy | None) -> CallPolicy | None:
        """Its policy under ``default`` (an agent's over its ensemble's): its own settings
        win, setting by setting; a tool keeping its own deadline takes no default timeout."""
        if default is None or not self.takes_defaults:
            return self.policy
        if self.own_deadline and default.timeout is not None:
            default = default.model_copy(update={"timeout": None})
        return decided(name, layered(self.own, default), gated=self.declares_approval)

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


# -- the policy around a tool's body ---------------------------------------------------------

#: The policy of the call being run and its slots (a semaphore when it bounds bodies at once),
#: set by the executor around one call (``policed``) and read where the body runs (``run_body``).
_call_policy: ContextVar[tuple[CallPolicy, asyncio.Semaphore | None] | None] = ContextVar(
    "agentensemble_tool_policy", default=None
)


class ToolSlots:
    """One run's bounds on bodies at once, by tool name and bound: every agent, task and
    parallel branch of the run shares them (a nested ensemble run has its own). Two agents
    whose defaults give one tool different bounds each keep theirs, whoever calls first."""

    def __init__(self) -> None:
        self._slots: dict[tuple[str, int], asyncio.Semaphore] = {}

    def get(self, policy: CallPolicy) -> asyncio.Semaphore | None:
        if policy.max_concurrency is None:
            return None
        key = (policy.name, policy.max_concurrency)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = asyncio.Semaphore(policy.max_concurrency)
        return slot


class policed:
    """The block runs one call under ``policy`` (its body's runs read it in ``run_body``)."""

    __slots__ = ("_token", "_value")

    def __init__(self, policy: CallPolicy, slot: asyncio.Semaphore | None) -> None:
        self._value = (policy, slot)

    def __enter__(self) -> None:
        self._token = _call_policy.set(self._value)

    def __exit__(self, *_: object) -> None:
        _call_policy.reset(self._token)


def timed_out_message(name: str, timeout: float) -> str:
    """What the model sees for a body that ran past its timeout."""
    return f"tool {name!r} timed out after {timeout:g} s"


async def run_policed(body: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``body(*args)`` under the current call's policy, if any: at most ``max_concurrency`` at
    once in the run, each run within ``timeout``, run again ``retries`` times (with backoff)
    when it raised unexpectedly or timed out. A nested tool call inside the body has its own
    policy."""
    current = _call_policy.get()
    if current is None:
        return await body(*args)
    policy, slot = current
    token = _call_policy.set(None)
    try:
        retries = 0 if policy.gated else policy.retries
        for attempt in range(retries + 1):
            try:
                return await _one_run(policy, slot, body, args)
            except BaseException as exc:
                if attempt == retries or not _retryable(exc):
                    raise
                _log_retry(policy, attempt + 1, retries, exc)
            await asyncio.sleep(_backoff(attempt + 1))
        raise AssertionError("unreachable: the last attempt returns or raises")
    finally:
        _call_policy.reset(token)


async def _one_run(
    policy: CallPolicy,
    slot: asyncio.Semaphore | None,
    body: Callable[..., Awaitable[T]],
    args: tuple[Any, ...],
) -> T:
    if slot is not None:
        async with slot:
            return await _timed(policy, body, args)
    return await _timed(policy, body, args)


async def _timed(policy: CallPolicy, body: Callable[..., Awaitable[T]], args: tuple[Any, ...]) -> T:
    if policy.timeout is None:
        return await body(*args)
    try:
        return await asyncio.wait_for(body(*args), policy.timeout)
    except asyncio.TimeoutError:  # the body was cancelled (a sync one is left in its thread)
        from agentensemble.tools.context import current_tool_context

        _timed_out_event(current_tool_context(), policy)
        raise ToolTimeoutError(timed_out_message(policy.name, policy.timeout)) from None


class ToolTimeoutError(ToolExecutionError):
    """A tool body ran past its ``timeout``: the call's failure, which the model sees."""


def _timed_out_event(context: ToolContext, policy: CallPolicy) -> None:
    from agentensemble.events import ToolCallTimedOut

    context.emit_event(
        ToolCallTimedOut(
            agent_role=context.agent_role,
            task_description=context.task_description,
            tool_name=policy.name,
            timeout=policy.timeout or 0.0,
        )
    )


def _retryable(exc: BaseException) -> bool:
    """A body's failure worth another run: a timeout, or an unexpected exception. Not a
    ``ToolExecutionError`` the tool raised on purpose (its answer for the model, like a
    failure result), a stop of the run, Ctrl-C or a cancellation meant for the call."""
    if isinstance(exc, ToolTimeoutError):
        return True
    return (
        isinstance(exc, Exception)
        and not isinstance(exc, ToolExecutionError)
        and not stops_the_run(exc)
    )


def _backoff(attempt: int) -> float:
    base = min(RETRY_MAX_BACKOFF, RETRY_BACKOFF * 2.0 ** (attempt - 1))
    return float(base * (1.0 - 0.5 * random.random()))


def _log_retry(policy: CallPolicy, attempt: int, retries: int, exc: BaseException) -> None:
    from agentensemble.logging import get_logger

    get_logger().warning(
        "tool_retry",
        tool=policy.name,
        attempt=attempt,
        retries=retries,
        error=preview(exception_message(exc)),
    )


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
    "CallPolicy",
    "ToolSlots",
    "ToolTimeoutError",
    "check_policy",
    "decided",
    "exception_message",
    "log_call",
    "own_policy",
    "policed",
    "preview",
    "run_policed",
    "stops_the_run",
    "timed_out_message",
]
