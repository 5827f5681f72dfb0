"""The tool calls of one model turn: planned from the tools' ``CallPlan``s, run together, and
recorded as one value (``ToolTurn``) the executor's loop reads.

How a turn runs (``plan_turn``): a lone call whose work on the event loop is all the
framework's own is awaited in the turn's task (``run_alone``); calls of a durable run that make
steps of their own run each in a branch numbering its steps apart, or one after another when
the runner cannot number them apart; every other turn runs its calls at once (``run_turn``).

``asyncio.gather`` would let the other calls go on when one of them stops the run
(ExitEarlyError, a review error, a ConfigurationError): they would keep acting after ``arun()``
returned, and an approval still pending among them could be granted and act. Here the first
call that stops the run cancels its siblings, marks the turn stopped (so a sync tool's approval
answered later approves nothing) and waits until every sibling has ended before the error goes
on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agentensemble._base.dataclass import dataclass
from agentensemble._base.interrupts import Interrupted, reraise_interrupt
from agentensemble.attachments import redacted_documents
from agentensemble.errors import MaxIterationsExceededError
from agentensemble.events import EventEmitter, ToolCallCompleted, ToolCallStarted
from agentensemble.execution.env import ExecutionEnv
from agentensemble.limits import before_tool_call
from agentensemble.llm.types import ATTACHMENTS_KEY, Message, ToolCall
from agentensemble.outputs import ReturnBehavior, ToolCallRecord
from agentensemble.redaction import redact_text
from agentensemble.steps import as_step, branches, checkpointing
from agentensemble.tools._calls import UNKNOWN_TOOL, CallPlan, CallPolicy, policed
from agentensemble.tools._gate import ToolCallResult
from agentensemble.tools.base import ToolResult
from agentensemble.tools.context import ToolContext, use_tool_context
from agentensemble.tools.return_rule import should_return_immediately

if TYPE_CHECKING:
    from agentensemble.tools.policy import ToolPolicy
    from agentensemble.tools.resolver import ExecutableTool, ResolvedTools

T = TypeVar("T")
MAX_STOPS = 3
STOP_MESSAGE = (
    "STOP: the tool-call limit for this task ({limit}) is reached; this call was not executed. "
    "Do not call any more tools. Give your final answer now."
)

TurnShape = Literal["alone", "together", "in_order", "branches"]
"""How the calls of one turn run: see ``plan_turn``."""


@dataclass(slots=True)
class _CallOutcome:
    call: ToolCall
    result: ToolResult
    behavior: ReturnBehavior
    duration: float
    executed: bool
    ran_with: str | None = None


@dataclass
class ToolTurn:
    """How one model turn's tool calls ended."""

    outcomes: list[_CallOutcome]
    """Each call's outcome, in call order (calls past the task's limit were not executed)."""
    next: str | None
    """The task's answer when it ends now (the joined outputs of IMMEDIATE tools); None: the
    model sees the results and goes on."""


def plan_turn(plans: Sequence[CallPlan], *, checkpointed: bool, handler_waits: bool) -> TurnShape:
    """How the calls with these ``plans`` run, in a durable run (``checkpointed``) or not.

    ``branches``: a durable run whose calls make steps of their own (a delegation, an approval
    waiting in the run: ``handler_waits``), several at once, each numbering its steps in a
    branch of its own; ``in_order`` the same for one call (or a runner that cannot branch).
    ``alone``: one call that runs nothing but the framework's code on the event loop (a sync
    ``@tool`` that never asks, an unknown tool), in a plain run: no user code on the loop could
    set context variables the rest of the task would see, or swallow the turn's cancellation.
    (A durable run's steps keep a task each: its step runner's code runs on the loop.)
    ``together``: anything else, each call in a task of its own.
    """
    if checkpointed and any(plan.own_steps(handler_waits) for plan in plans):
        return "branches" if len(plans) > 1 else "in_order"
    if len(plans) == 1 and not checkpointed and plans[0].runs_alone:
        return "alone"
    return "together"


class ToolTurns:
    """The tool calls of one agent on one task, turn by turn: each turn's calls run as planned,
    then the assistant's message and every result join the conversation together (a cancelled
    turn never leaves a call without its result in the history), each recorded and reported."""

    def __init__(
        self,
        *,
        tools: ResolvedTools | None,
        role: str,
        description: str,
        limit: int,
        env: ExecutionEnv,
        emitter: EventEmitter | None,
        messages: list[Message],
        records: list[ToolCallRecord],
        model: Any = None,
        tool_policy: ToolPolicy | None = None,
    ) -> None:
        """``emitter``: the run's, when it has listeners (else None); ``messages`` and
        ``records``: the task's conversation and tool records, appended to in place;
        ``model``: the agent's (tools see it in their context); ``tool_policy``: the agent's
        over the ensemble's, for tools that leave a setting to it."""
        self._tools = tools
        self._role = role
        self._description = description
        self._limit = limit
        self._env = env
        self._emitter = emitter
        self._messages = messages
        self._records = records
        self._model = model
        self._made = 0
        self._stops = 0
        self._default = tool_policy
        self._policies: dict[str, CallPolicy | None] = {}  # by tool name, decided once
        # the handler's answer is fixed for the run: asked once, not per call
        self._handler_waits = getattr(env.review_handler, "durable_itself", False) is True

    async def run(self, calls: Sequence[ToolCall], said: Message) -> ToolTurn:
        """Run one response's calls (those within the task's limit); ``said``: the assistant's
        message that made them, appended before their results."""
        limit = self._limit
        allowed = max(0, min(len(calls), limit - self._made))
        self._made += allowed
        running = [(call, self._tool(call.name)) for call in calls[:allowed]]
        shape = plan_turn(
            [UNKNOWN_TOOL if tool is None else tool.plan for _, tool in running],
            checkpointed=checkpointing(),
            handler_waits=self._handler_waits,
        )
        emitter = self._emitter
        context = ToolContext(
            review_handler=self._env.review_handler,
            metrics=self._env.metrics,
            emit=emitter.emit if emitter is not None else None,
            task_description=self._description,
            agent_role=self._role,
            loop=asyncio.get_running_loop(),  # set here: use_tool_context need not copy it
            model=self._model,
            tool_slots=self._env.tool_slots,
        )
        with use_tool_context(context):
            if shape == "alone":
                executed = [await run_alone(self._run_one(*running[0]), context.stopped)]
            else:
                executed = await self._run_calls(shape, running, context.stopped)
        stopped = [
            _CallOutcome(
                call,
                ToolResult.failure(STOP_MESSAGE.format(limit=limit)),
                self._behavior(call.name),
                0.0,
                executed=False,
            )
            for call in calls[allowed:]
        ]
        outcomes = [*executed, *stopped]
        self._messages.append(said)
        for outcome in outcomes:
            self._record(outcome)
        if stopped:
            self._stops += 1
            if self._stops >= MAX_STOPS:
                raise MaxIterationsExceededError(
                    f"Agent '{self._role}' kept calling tools after the limit of {limit} "
                    f"tool calls and {MAX_STOPS} stop instructions",
                    tool_calls=self._records,
                )
        any_failed = any(not o.result.is_success for o in outcomes)
        if should_return_immediately([o.behavior for o in outcomes], any_failed):
            return ToolTurn(outcomes, "\n\n".join(o.result.output for o in outcomes))
        return ToolTurn(outcomes, None)

    async def _run_calls(
        self,
        shape: TurnShape,
        running: list[tuple[ToolCall, ExecutableTool | None]],
        stopped: threading.Event,
    ) -> list[_CallOutcome]:
        """Every shape but ``alone`` (awaited in ``run`` itself, with no frame of its own)."""
        if shape == "together":
            return await run_turn([self._run_one(*pair) for pair in running], stopped)
        scopes = branches(len(running)) if shape == "branches" else None
        if scopes is None:  # one call, or a runner that cannot number calls apart
            return await run_in_order([partial(self._run_one, *pair) for pair in running], stopped)
        return await run_turn(
            [
                in_scope(scope, self._run_one, *pair)
                for scope, pair in zip(scopes, running, strict=True)
            ],
            stopped,
        )

    def _tool(self, name: str) -> ExecutableTool | None:
        return self._tools.get(name) if self._tools is not None else None

    def _behavior(self, name: str) -> ReturnBehavior:
        tool = self._tool(name)
        return tool.return_behavior if tool is not None else ReturnBehavior.TO_LLM

    async def _run_one(self, call: ToolCall, tool: ExecutableTool | None) -> _CallOutcome:
        before_tool_call(call.name)  # limits.py: the run's tool_calls budget, before anything
        if self._emitter is not None:
            self._emitter.emit(
                ToolCallStarted(self._role, self._description, call.id, call.name, call.arguments)
            )
        started = time.perf_counter()
        if tool is None:
            available = ", ".join(self._tools.names) if self._tools else "none"
            result = ToolResult.failure(f"Unknown tool '{call.name}'. Available tools: {available}")
            duration = time.perf_counter() - started
            return _CallOutcome(call, result, ReturnBehavior.TO_LLM, duration, True)
        policy = self._policy(tool)
        if policy is None:
            called = await self._call(tool, call)
        else:  # its body runs under the tool's timeout, retries and bound (_calls.run_policed)
            with policed(policy, self._env.tool_slots.get(policy)):
                called = await self._call(tool, call)
        duration = time.perf_counter() - started
        return _CallOutcome(
            call, called.result, tool.return_behavior, duration, True, called.ran_with
        )

    def _policy(self, tool: ExecutableTool) -> CallPolicy | None:
        """The tool's own policy over this agent's default (decided once per task)."""
        if self._default is None:
            return tool.plan.policy
        name = tool.name
        if name not in self._policies:
            self._policies[name] = tool.plan.under(name, self._default)
        return self._policies[name]

    def _call(self, tool: ExecutableTool, call: ToolCall) -> Awaitable[ToolCallResult]:
        """One call of ``tool`` as a step of the run (its outcome, a timed-out body's failure
        included, is what a durable run checkpoints)."""
        return as_step(
            "tool",
            tool.step_name,
            _redacted_call,
            tool,
            call.arguments,
            durable_itself=tool.plan.own_steps(self._handler_waits),
        )

    def _record(self, outcome: _CallOutcome) -> None:
        result = outcome.result
        content = result.output if result.is_success else f"Error: {result.error_message or ''}"
        if not outcome.executed:
            content = result.error_message or ""
        # the model's provider is outside the process: what a tool, a server's stderr or a
        # reviewer's rejection carries passes the redaction policy (and so do the record, the
        # events, the trace and durable records made from it)
        content = redact_text(content)
        message: Message = {"role": "tool", "tool_call_id": outcome.call.id, "content": content}
        if result.attachments and result.is_success:  # sent after the turn (llm/_messages.py)
            message[ATTACHMENTS_KEY] = list(result.attachments)
        self._messages.append(message)
        record = ToolCallRecord(
            name=outcome.call.name,
            arguments=outcome.ran_with or outcome.call.arguments,
            model_arguments=outcome.call.arguments if outcome.ran_with is not None else None,
            output=content,
            is_success=result.is_success,
            duration=timedelta(seconds=outcome.duration),
            return_behavior=outcome.behavior,
            structured_output=result.structured_output,
        )
        self._records.append(record)
        if self._emitter is not None:
            self._emitter.emit(
                ToolCallCompleted(
                    agent_role=self._role,
                    task_description=self._description,
                    record=record,
                    call_id=outcome.call.id,
                )
            )


async def _redacted_call(tool: ExecutableTool, arguments: str) -> ToolCallResult:
    """One call of ``tool``, its result through the redaction policy, as the model's text is:
    what a durable run checkpoints (a record outside the process) and what an IMMEDIATE tool
    returns."""
    called = await tool.call(arguments)
    shown = _redacted(called.result)
    if shown is called.result:  # nothing to redact: no copy
        return called
    return dataclasses.replace(called, result=shown)


def _redacted(result: ToolResult) -> ToolResult:
    """``result`` with its texts through the redaction policy, text documents it returned
    included (images and PDFs are sent as they are: their bytes are never rewritten).
    ``structured_output`` is the tool's own value: it travels to records and listeners, never
    to the model."""
    error = None if result.error_message is None else redact_text(result.error_message)
    output = redact_text(result.output)
    attachments = redacted_documents(result.attachments, redact_text)
    if (output, error, attachments) == (result.output, result.error_message, result.attachments):
        return result
    return dataclasses.replace(result, output=output, error_message=error, attachments=attachments)


# -- running the calls of one turn -----------------------------------------------------------


async def run_turn(calls: Sequence[Coroutine[Any, Any, T]], stopped: threading.Event) -> list[T]:
    """Run ``calls`` concurrently; their results in call order.

    When one raises, or this turn is cancelled, ``stopped`` is set, the calls still running are
    cancelled and awaited, and the first error (in call order) is raised.
    """
    # a tool's KeyboardInterrupt crosses the task boundary as Interrupted (see _base/interrupts.py)
    tasks = [asyncio.ensure_future(_carried(call)) for call in calls]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:  # this turn is cancelled (Ctrl-C, arun() cancelled)
        await _stop(tasks, stopped)
        raise
    failed = [task for task in tasks if task.done() and _raised(task)]
    if failed:
        await _stop(tasks, stopped)
        error = failed[0].exception()
        reraise_interrupt(error)  # Ctrl-C raised by a tool: stops the run as Ctrl-C does
        raise error  # type: ignore[misc]  # checked by _raised
    return [task.result() for task in tasks]


async def run_alone(call: Coroutine[Any, Any, T], stopped: threading.Event) -> T:
    """``run_turn`` of one call whose work on the event loop is all the framework's own (a
    sync tool's body runs in a worker thread, with a copy of the context variables): awaited
    in the turn's own task, not in a task of its own (about 20 us and two turns of the event
    loop fewer, per call).

    When it raises, or this turn is cancelled, ``stopped`` is set before the error goes on; the
    call has ended by then (there are no siblings to cancel). A KeyboardInterrupt goes on as
    itself, as ``run_turn`` raises it again.
    """
    try:
        return await call
    except BaseException:
        stopped.set()
        raise


async def run_in_order(
    calls: Sequence[Callable[[], Coroutine[Any, Any, T]]], stopped: threading.Event
) -> list[T]:
    """Run ``calls`` one after another, in call order; the first error stops the turn.

    For a checkpointed run whose calls make steps of their own (a delegation): their steps
    must start in the same order on every replay, which calls running at once cannot promise.
    """
    results: list[T] = []
    for call in calls:
        try:
            results.append(await call())
        except BaseException:
            stopped.set()
            raise
    return results


async def in_scope(
    scope: AbstractContextManager[Any], fn: Callable[..., Awaitable[T]], *args: Any
) -> T:
    """``fn(*args)`` inside ``scope`` (a branch of a durable run: see ``steps.branches``)."""
    with scope:
        return await fn(*args)


async def _carried(call: Coroutine[Any, Any, T]) -> T:
    try:
        return await call
    except KeyboardInterrupt as exc:
        raise Interrupted(exc) from None


def _raised(task: asyncio.Future[Any]) -> bool:
    return not task.cancelled() and task.exception() is not None


async def _stop(tasks: Sequence[asyncio.Future[Any]], stopped: threading.Event) -> None:
    """Mark the turn stopped, cancel what still runs and wait for it to end."""
    stopped.set()
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
    for task in tasks:  # retrieve every outcome so none is reported as never retrieved
        if task.done() and not task.cancelled():
            task.exception()


__all__ = [
    "MAX_STOPS",
    "STOP_MESSAGE",
    "ToolTurn",
    "ToolTurns",
    "TurnShape",
    "plan_turn",
    "run_alone",
    "run_in_order",
    "run_turn",
]
