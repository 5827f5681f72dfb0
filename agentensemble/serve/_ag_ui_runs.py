"""The runs an AG-UI app holds: each runs in a task of its own, its events queued for the
HTTP stream that reads them, and it outlives a stream that ends at an interrupt.

A run belongs to the caller that started it (the name of its token, else its address) and to
its thread: a resume finds only the caller's own run of that thread. A run that waits for a
review has no stream; it goes on when a resume answers its interrupts, or ends when its review
times out (cancelled even when ``on_timeout`` says go on: no stream could read it again). A new
run on the thread abandons it (cancelled: nothing it waited for is approved). A run whose
stream goes away while it works is cancelled. The held runs are bounded per caller and in all
(``AGUIRunLimits``), and so is a run's queue of unread events.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentensemble._run import execute
from agentensemble.events import EnsembleEvent, ToolCallCompleted, ToolCallStarted
from agentensemble.logging import get_logger
from agentensemble.serve._ag_ui_events import RunState
from agentensemble.serve._ag_ui_review import PendingReview, ServedRun, current_run
from agentensemble.serve._durable_serving import run_durably
from agentensemble.tools.decorator import tool_definition
from agentensemble.workflows.prepare import team_and_task_agents
from agentensemble.workflows.step import leaf_tasks

#: The schema of a tool with no schema of its own: one string parameter, ``input``.
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string"}},
    "required": ["input"],
}
#: The most interrupt ids remembered after they closed (to say why a late answer is refused).
MAX_CLOSED = 1_000


@dataclass(frozen=True)
class AGUIRunLimits:
    """How many runs an AG-UI app holds (running, or waiting for a review's answer), and how
    long a stream stays quiet before a keep-alive comment."""

    max_runs_per_caller: int = 8
    max_runs: int = 256
    max_queued_events: int = 20_000
    keepalive_seconds: float = 15.0


class Refused(Exception):
    """A request the app cannot honour: its HTTP status and a message naming why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class HeldRun(ServedRun):
    """One run: its task, its queue of items for the stream, its pending reviews and state.

    Items: ``("event", event)``, ``("interrupt", review)``, ``("done", output)``,
    ``("error", exception)``."""

    def __init__(self, key: tuple[str, str], limits: AGUIRunLimits) -> None:
        self.key = key
        self.limits = limits
        self.state = RunState()
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.pending: OrderedDict[str, PendingReview] = OrderedDict()
        self.closed: OrderedDict[str, str] = OrderedDict()  # interrupt id -> why it closed
        self.attached = False
        self.task: asyncio.Task[None] | None = None
        self.ensemble: Any = None
        self._overflowed = False
        self._open_calls: dict[str, str] = {}  # tool call id -> tool name, until its result

    # -- the run

    def start(
        self,
        ensemble: Any,
        inputs: dict[str, Any],
        session: str | None,
        runs: Runs,
        durable: tuple[Any, str] | None = None,
    ) -> None:
        """Start the run: in this process, or as a durable run of ``durable`` (a launched
        runtime and the name the ensemble is registered under)."""
        self.ensemble = ensemble
        self.task = asyncio.ensure_future(self._main(ensemble, inputs, session, durable))
        self.task.add_done_callback(lambda _: runs.forget(self))

    async def _main(
        self,
        ensemble: Any,
        inputs: dict[str, Any],
        session: str | None,
        durable: tuple[Any, str] | None,
    ) -> None:
        current_run.set(self)  # this task's own context: the review handler reads it
        try:
            if durable is not None:
                output = await run_durably(durable[0], durable[1], inputs, self)
            else:
                output = await execute(ensemble, inputs, [self], stream=True, session=session)
        except Exception as error:
            self._put(("error", error))
        except asyncio.CancelledError:
            self._put(("error", asyncio.CancelledError("the run was cancelled")))
            raise
        else:
            self._put(("done", output))

    def on_event(self, event: EnsembleEvent) -> None:
        if isinstance(event, ToolCallStarted):
            self._open_calls[event.call_id] = event.name
        elif isinstance(event, ToolCallCompleted) and event.call_id is not None:
            self._open_calls.pop(event.call_id, None)
        self._put(("event", event))

    def _put(self, item: tuple[str, Any]) -> None:
        if self.queue.qsize() >= self.limits.max_queued_events and item[0] == "event":
            if not self._overflowed and self.task is not None:
                self._overflowed = True
                get_logger().warning("ag-ui run stopped: its events were not read", key=self.key)
                self.task.cancel()
            return
        self.queue.put_nowait(item)

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    # -- reviews

    async def ask(self, request: Any) -> Any:
        """A review of this run: an interrupt for the stream, answered by a resume."""
        loop = asyncio.get_running_loop()
        pending = PendingReview(
            request,
            loop.create_future(),
            tool_call_id=self._tool_call_id(request),
            tool_schema=self._tool_schema(request.tool_name),
        )
        self.pending[pending.id] = pending
        self._put(("interrupt", pending))
        try:
            return await pending.future
        finally:
            if self.pending.pop(pending.id, None) is not None:
                self._close(pending.id, "it timed out (its on_timeout rule was applied)")
                if not self.attached and not self.pending:
                    # no stream will ever read this run again (a resume needs an open
                    # interrupt): it ends here rather than go on for nobody, its thread held
                    self.cancel()

    def _close(self, interrupt_id: str, why: str) -> None:
        self.closed[interrupt_id] = why
        while len(self.closed) > MAX_CLOSED:
            self.closed.popitem(last=False)

    def decide(self, decisions: Mapping[str, tuple[Any, dict[str, Any]]]) -> list[Any]:
        """Apply decisions (interrupt id -> decision, record); returns the state changes."""
        ops: list[Any] = []
        for interrupt_id, (decided, record) in decisions.items():
            pending = self.pending.pop(interrupt_id)
            self._close(interrupt_id, "it was already answered")
            if not pending.future.done():
                pending.future.set_result(decided)
            ops += self.state.review_decided(interrupt_id, record)
            get_logger().info(
                "ag-ui review decided",
                review_id=interrupt_id,
                tool_name=pending.request.tool_name,
                decision=record["status"],
                decided_by=record["decidedBy"],
            )
        return ops

    def _tool_call_id(self, request: Any) -> str | None:
        """The tool call a tool approval concerns: the tool's oldest call of this run whose
        result has not come yet and that is not under review already."""
        if not request.tool_name:
            return None
        reviewed = {p.tool_call_id for p in self.pending.values()}
        for call_id, name in self._open_calls.items():
            if name == request.tool_name and call_id not in reviewed:
                return call_id
        return None

    def _tool_schema(self, tool_name: str | None) -> dict[str, Any] | None:
        """The tool's argument schema, when the tool is one of the crew's own objects (a
        ``@tool`` function or an ``AgentTool``; an MCP server's tools are listed only as a run
        starts: their edits are checked when the tool runs)."""
        if not tool_name or self.ensemble is None:
            return None
        tools = [tool for task in leaf_tasks(self.ensemble.tasks) for tool in task.tools or ()]
        tools += [tool for agent in team_and_task_agents(self.ensemble) for tool in agent.tools]
        for tool in tools:
            definition = tool_definition(tool)
            if definition is not None:
                if definition.name == tool_name:
                    return dict(definition.schema.parameters)
                continue
            if getattr(tool, "name", None) == tool_name and callable(
                getattr(tool, "parameters_schema", None)
            ):
                schema = tool.parameters_schema()
                return dict(schema) if schema is not None else INPUT_SCHEMA
        return None


class Runs:
    """The held runs, by (caller, thread id)."""

    def __init__(self, limits: AGUIRunLimits) -> None:
        self.limits = limits
        self._held: dict[tuple[str, str], HeldRun] = {}

    def new(self, caller: str, thread_id: str) -> HeldRun:
        """A run for the thread (abandoning one that waits for review there), or ``Refused``."""
        key = (caller, thread_id)
        held = self._held.get(key)
        if held is not None:
            if held.attached or not held.pending:
                raise Refused(409, f"thread {thread_id!r} already has a run in progress")
            held.cancel()  # waiting for review: a new run abandons it (nothing is approved)
            self.forget(held)
        mine = sum(1 for who, _ in self._held if who == caller)
        if mine >= self.limits.max_runs_per_caller:
            raise Refused(
                429,
                f"you already hold {mine} runs (running or waiting for review): finish or "
                "answer one first",
            )
        if len(self._held) >= self.limits.max_runs:
            raise Refused(503, "the server holds too many runs; try again later")
        run = HeldRun(key, self.limits)
        self._held[key] = run
        return run

    def waiting(self, caller: str, thread_id: str) -> HeldRun:
        """The caller's run of the thread that waits for review, or ``Refused``."""
        held = self._held.get((caller, thread_id))
        if held is None:
            raise Refused(
                409,
                f"no run of thread {thread_id!r} waits for review (it finished, its review timed "
                "out, or another caller started it): start a new run without resume",
            )
        if held.attached:
            raise Refused(409, f"the run of thread {thread_id!r} is being streamed already")
        return held

    def forget(self, run: HeldRun) -> None:
        if self._held.get(run.key) is run:
            del self._held[run.key]

    async def close(self) -> None:
        """Cancel every held run (the app is stopping)."""
        runs = list(self._held.values())
        for run in runs:
            run.cancel()
        for run in runs:
            if run.task is not None:
                with contextlib.suppress(BaseException):
                    await run.task


__all__ = ["AGUIRunLimits", "HeldRun", "Refused", "Runs"]
