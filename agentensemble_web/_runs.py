"""What the console knows about runs: a summary per run and its recent events.

Events arrive as JSON objects (``{"type": "TaskStarted", "run_id": ..., ...}``, see
``agentensemble_web.wire``), already cleaned by ``_sanitize.clean``. The board keeps a bounded
number of runs and of events per run; consecutive token deltas of one model call are merged so a
long streamed answer is one stored event. Every change is published to the hub.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from agentensemble_web._hub import Hub
from agentensemble_web._sanitize import MAX_TEXT

MAX_RUNS = 500
MAX_EVENTS_PER_RUN = 5_000


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


@dataclass
class Run:
    """One run's summary and its recent events."""

    run_id: str
    started_at: float
    status: str = "running"
    ended_at: float | None = None
    tasks_total: int = 0
    tasks_done: int = 0
    tokens: int = 0
    cost_usd: float | None = None
    error: str | None = None
    exit_reason: str | None = None
    events: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS_PER_RUN))

    def summary(self) -> dict[str, Any]:
        """The runs page's row for this run."""
        end = self.ended_at if self.ended_at is not None else time.time()
        return {
            "run_id": self.run_id,
            "status": self.status,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "duration_seconds": round(max(0.0, end - self.started_at), 3),
            "tasks_total": self.tasks_total,
            "tasks_done": self.tasks_done,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "error": self.error,
            "exit_reason": self.exit_reason,
        }

    def apply(self, event: dict[str, Any]) -> None:
        """Update the summary from one event."""
        kind = event["type"]
        if kind in ("EnsembleStarted", "TaskStarted"):
            self.tasks_total = int(_number(event.get("total_tasks"))) or self.tasks_total
        elif kind == "TaskCompleted":
            self.tasks_done = min(self.tasks_done + 1, max(self.tasks_total, self.tasks_done + 1))
        elif kind == "LLMCallCompleted":
            usage = event.get("usage")
            if isinstance(usage, dict):
                self.tokens += int(_number(usage.get("total_tokens")))
            if isinstance(event.get("cost_usd"), int | float):
                self.cost_usd = (self.cost_usd or 0.0) + _number(event["cost_usd"])
        elif kind == "EnsembleCompleted":
            self.status = "completed"
            self.ended_at = time.time()
            output = event.get("output")
            if isinstance(output, dict):
                reason = output.get("exit_reason")
                self.exit_reason = reason if isinstance(reason, str) else None
                if self.exit_reason and self.exit_reason != "completed":
                    self.status = self.exit_reason
        elif kind == "EnsembleFailed":
            self.status = "failed"
            self.ended_at = time.time()
            self.error = str(event.get("error", ""))[:2000]

    def store(self, event: dict[str, Any]) -> None:
        """Keep the event; a token delta continuing the previous one is merged into it."""
        if event["type"] == "TokenDelta" and self.events:
            last = self.events[-1]
            if (
                last["type"] == "TokenDelta"
                and last.get("call_id") == event.get("call_id")
                and len(str(last.get("text", ""))) < MAX_TEXT
            ):
                merged = dict(last)
                merged["text"] = str(last.get("text", "")) + str(event.get("text", ""))
                self.events[-1] = merged
                return
        self.events.append(event)


class RunBoard:
    """Every run the console has heard of, oldest first, bounded by ``MAX_RUNS``."""

    def __init__(self, hub: Hub) -> None:
        self._hub = hub
        self._runs: OrderedDict[str, Run] = OrderedDict()

    def add(self, event: dict[str, Any]) -> None:
        """Record one cleaned event (with string ``type`` and ``run_id``) and publish it."""
        run = self._runs.get(event["run_id"])
        if run is None:
            run = Run(event["run_id"], started_at=time.time())
            self._runs[run.run_id] = run
            self._evict()
        run.apply(event)
        run.store(event)
        self._hub.publish({"kind": "event", "event": event})
        if event["type"] != "TokenDelta":  # a streamed word changes nothing in the summary
            self._hub.publish({"kind": "run", "run": run.summary()})

    def summaries(self) -> list[dict[str, Any]]:
        """Every run's summary, newest first."""
        return [run.summary() for run in reversed(self._runs.values())]

    def get(self, run_id: str) -> Run | None:
        return self._runs.get(run_id)

    def review_context(
        self, run_id: str | None, tool_name: str | None, task_description: str
    ) -> dict[str, Any] | None:
        """Who asks and why, from the run's events: for a tool call, the agent and the text of
        the model turn that asked for it (its reasoning); for a task, the task's agent. None
        while the run's events have not arrived (they come on their own connection)."""
        run = self._runs.get(run_id) if run_id else None
        if run is None:
            return None
        for event in reversed(run.events):
            kind = event["type"]
            if tool_name and kind == "LLMCallCompleted":
                response = event.get("response")
                calls = response.get("tool_calls") if isinstance(response, dict) else None
                names = [c.get("name") for c in calls or [] if isinstance(c, dict)]
                if tool_name in names and isinstance(response, dict):
                    return {
                        "agent_role": event.get("agent_role"),
                        "reasoning": response.get("content") or "",
                        "task_index": event.get("task_index"),
                    }
            elif (
                not tool_name
                and kind == "TaskStarted"
                and event.get("task_description") == task_description
            ):
                return {
                    "agent_role": event.get("agent_role"),
                    "reasoning": "",
                    "task_index": event.get("task_index"),
                }
        return None

    def _evict(self) -> None:
        while len(self._runs) > MAX_RUNS:
            finished = next((k for k, r in self._runs.items() if r.ended_at is not None), None)
            self._runs.pop(finished if finished is not None else next(iter(self._runs)))


__all__ = ["MAX_EVENTS_PER_RUN", "MAX_RUNS", "Run", "RunBoard"]
