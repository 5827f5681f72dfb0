"""Console progress output: one listener among others, switched on by ``verbose=True``."""

from __future__ import annotations

import sys
from typing import TextIO

from agentensemble._base.display import escape_for_display
from agentensemble.events import (
    DelegationCompleted,
    DelegationFailed,
    DelegationStarted,
    EnsembleCompleted,
    EnsembleEvent,
    GraphStepCompleted,
    LoopIterationCompleted,
    ReviewDecided,
    TaskCompleted,
    TaskFailed,
    TaskStarted,
    ToolCallCompleted,
)
from agentensemble.redaction import redact_text

_WIDTH = 200


def _short(text: str, width: int = _WIDTH) -> str:
    """One line of at most ``width`` characters (a summary: the full text is in the output)."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


class ConsoleProgressListener:
    """Prints one line per task start/finish, tool call, review decision, loop iteration and
    graph step. ``[i/n]``: task run ``i`` of at most ``n`` (loops and graphs count their caps)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def _print(self, line: str) -> None:
        """Print ``line`` escaped (model and tool text cannot drive the terminal or fail to
        print in the stream's encoding) and with known secrets redacted."""
        stream = self._stream or sys.stderr
        shown = escape_for_display(redact_text(line), encoding=getattr(stream, "encoding", None))
        print(shown, file=stream, flush=True)

    def on_event(self, event: EnsembleEvent) -> None:
        if isinstance(event, TaskStarted):
            self._print(
                f"[{event.task_index}/{event.total_tasks}] {event.agent_role}: "
                f"{_short(event.task_description, 80)}"
            )
        elif isinstance(event, ToolCallCompleted):
            mark = "ok" if event.record.is_success else "failed"
            self._print(
                f"    tool {event.record.name}({_short(event.record.arguments, 80)}) {mark} -> "
                f"{_short(event.record.output, 120)}"
            )
        elif isinstance(event, TaskCompleted):
            seconds = event.output.duration.total_seconds()
            calls = _count(event.output.llm_calls, "model call")
            tools = _count(len(event.output.tool_calls), "tool call")
            where = f"[{event.task_index}/{event.total_tasks}]"
            self._print(f"{where} done in {seconds:.2f}s ({calls}, {tools})")
        elif isinstance(event, TaskFailed):
            self._print(f"[{event.task_index}/{event.total_tasks}] failed: {event.error}")
        elif isinstance(event, ReviewDecided):
            self._print(f"    review ({event.timing}): {event.decision}")
        elif isinstance(event, DelegationStarted):
            self._print(
                f"    {event.from_role} asks {event.to_role}: {_short(event.instructions, 80)}"
            )
        elif isinstance(event, DelegationCompleted):
            self._print(f"    {event.to_role} answered {event.from_role}")
        elif isinstance(event, DelegationFailed):
            self._print(f"    delegation to {event.to_role} failed: {_short(event.error, 120)}")
        elif isinstance(event, LoopIterationCompleted):
            end = f", stopped by {event.stopped_by}" if event.stopped_by else ""
            self._print(f"  loop {event.loop_name}: iteration {event.iteration} done{end}")
        elif isinstance(event, GraphStepCompleted):
            target = event.next_state if event.next_state is not None else "(no edge)"
            self._print(f"  graph {event.graph_name}: step {event.step} {event.state} -> {target}")
        elif isinstance(event, EnsembleCompleted):
            self._print(f"finished: {event.output.exit_reason.value}")


__all__ = ["ConsoleProgressListener"]
