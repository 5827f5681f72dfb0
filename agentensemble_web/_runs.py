"""What the console knows about runs: a summary per run and its events, kept in the store.

Events arrive as JSON objects (``{"type": "TaskStarted", "run_id": ..., ...}``, see
``agentensemble_web.wire``), already cleaned by ``_sanitize.clean``. Runs being watched stay in
memory (bounded); every run and event is written to the ``Store`` so history survives a restart
and the runs page reads pages of it. Consecutive token deltas of one model call are merged into
one event in memory and never stored (the model turn that completes carries the same text).
Every change is published to the hub.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from agentensemble_web._hub import Hub
from agentensemble_web._sanitize import MAX_TEXT
from agentensemble_web.store import Store

MAX_RUNS = 500
"""Runs held in memory (the store keeps the others)."""
MAX_EVENTS_PER_RUN = 5_000
MAX_NAME = 120
MAX_AGENTS = 20


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
    name: str = ""
    agents: list[str] = field(default_factory=list)
    seq: int = 0
    events: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS_PER_RUN))

    @classmethod
    def restore(cls, summary: dict[str, Any], events: list[dict[str, Any]]) -> Run:
        """A run read back from the store."""
        fields = {k: summary[k] for k in _SUMMARY_FIELDS if k in summary}
        run = cls(**fields, seq=len(events))
        run.events.extend(events)
        return run

    def summary(self) -> dict[str, Any]:
        """The runs page's row for this run."""
        end = self.ended_at if self.ended_at is not None else time.time()
        return {
            "run_id": self.run_id,
            "name": self.name,
            "agents": list(self.agents),
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

    def search_text(self) -> str:
        return " ".join([self.run_id, self.name, *self.agents, self.status])

    def apply(self, event: dict[str, Any]) -> None:
        """Update the summary from one event."""
        kind = event["type"]
        ts = event.get("ts")
        at = float(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else time.time()
        if kind == "EnsembleStarted" and not self.seq:
            self.started_at = at
        if kind in ("EnsembleStarted", "TaskStarted"):
            self.tasks_total = int(_number(event.get("total_tasks"))) or self.tasks_total
        if kind == "TaskStarted":
            role = event.get("agent_role")
            if isinstance(role, str) and role and role not in self.agents:
                self.agents = [*self.agents, role[:100]][:MAX_AGENTS]
            description = event.get("task_description")
            if not self.name and isinstance(description, str):
                first_line = description.strip().split("\n", 1)[0]
                self.name = first_line[:MAX_NAME] + ("…" if len(first_line) > MAX_NAME else "")
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
            self.ended_at = max(at, self.started_at)
            output = event.get("output")
            if isinstance(output, dict):
                reason = output.get("exit_reason")
                self.exit_reason = reason if isinstance(reason, str) else None
                if self.exit_reason and self.exit_reason != "completed":
                    self.status = self.exit_reason
        elif kind == "EnsembleFailed":
            self.status = "failed"
            self.ended_at = max(at, self.started_at)
            self.error = str(event.get("error", ""))[:2000]

    def store(self, event: dict[str, Any]) -> bool:
        """Keep the event; a token delta continuing the previous one is merged into it.
        Whether the event is new (not merged)."""
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
                return False
        self.events.append(event)
        self.seq += 1
        return True


_SUMMARY_FIELDS = (
    "run_id",
    "started_at",
    "status",
    "ended_at",
    "tasks_total",
    "tasks_done",
    "tokens",
    "cost_usd",
    "error",
    "exit_reason",
    "name",
    "agents",
)


class RunBoard:
    """The runs: the ones watched in memory (bounded by ``MAX_RUNS``), all of them in the store."""

    def __init__(self, hub: Hub, store: Store) -> None:
        self._hub = hub
        self._store = store
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._dirty: set[str] = set()

    def add(self, event: dict[str, Any]) -> None:
        """Record one cleaned event (with string ``type`` and ``run_id``) and publish it;
        ``flush`` writes the batch."""
        run = self.get(event["run_id"])
        if run is None:
            run = Run(event["run_id"], started_at=time.time())
            self._runs[run.run_id] = run
            self._store.new_run()
            self._evict()
        run.apply(event)
        if run.store(event) and event["type"] != "TokenDelta":
            self._store.add_event(run.run_id, run.seq, event)
        self._hub.publish({"kind": "event", "event": event})
        if event["type"] != "TokenDelta":  # a streamed word changes nothing in the summary
            self._dirty.add(run.run_id)
            self._hub.publish({"kind": "run", "run": run.summary()})

    def flush(self) -> None:
        """Write the changed summaries and commit (once per batch of events)."""
        for run_id in self._dirty:
            run = self._runs.get(run_id)
            if run is not None:
                self._store.save_run(run.summary(), run.search_text())
        self._dirty.clear()
        self._store.commit()

    def page(
        self, *, limit: int = 50, offset: int = 0, query: str = "", status: str = ""
    ) -> tuple[list[dict[str, Any]], int]:
        """A page of summaries, newest first (running ones fresh from memory), and the total."""
        rows, total = self._store.runs(limit=limit, offset=offset, query=query, status=status)
        fresh = [
            self._runs[r["run_id"]].summary() if r["run_id"] in self._runs else r for r in rows
        ]
        return fresh, total

    def get(self, run_id: str) -> Run | None:
        """A run, from memory or read back from the store."""
        run = self._runs.get(run_id)
        if run is not None:
            self._runs.move_to_end(run_id)
            return run
        stored = self._store.run(run_id)
        if stored is None:
            return None
        run = Run.restore(*stored)
        self._runs[run_id] = run
        self._evict()
        return run

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
            gone = finished if finished is not None else next(iter(self._runs))
            if gone in self._dirty:
                run = self._runs[gone]
                self._store.save_run(run.summary(), run.search_text())
                self._dirty.discard(gone)
            self._runs.pop(gone)


__all__ = ["MAX_EVENTS_PER_RUN", "MAX_RUNS", "Run", "RunBoard"]
