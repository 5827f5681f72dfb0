"""Progress on stderr while a crew runs: a line per task start and finish, loop iteration and
graph step, and with ``--verbose`` a line per model call, tool call and guardrail check too."""

from __future__ import annotations

import sys
from typing import TextIO

from agentensemble.events import (
    EnsembleEvent,
    GraphStepCompleted,
    GuardrailChecked,
    LLMCallCompleted,
    LoopIterationCompleted,
    TaskCompleted,
    TaskFailed,
    TaskStarted,
)
from agentensemble.progress import ConsoleProgressListener


class CliProgress(ConsoleProgressListener):
    """The command line's progress lines (stderr, so stdout carries only the result)."""

    def __init__(self, *, verbose: bool = False, stream: TextIO | None = None) -> None:
        super().__init__(stream or sys.stderr)
        self._verbose = verbose

    def on_event(self, event: EnsembleEvent) -> None:
        if self._verbose:
            if isinstance(event, LLMCallCompleted):
                seconds = event.duration.total_seconds()
                self._print(f"    model {event.model} answered in {seconds:.2f}s")
            elif isinstance(event, GuardrailChecked):
                verdict = "passed" if event.passed else f"failed: {event.message}"
                self._print(f"    {event.kind} guardrail {event.guardrail} {verdict}")
            super().on_event(event)
        elif isinstance(
            event,
            TaskStarted | TaskCompleted | TaskFailed | LoopIterationCompleted | GraphStepCompleted,
        ):
            super().on_event(event)


__all__ = ["CliProgress"]
