"""What the trace recorder keeps per task and per open review while a run goes on."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentensemble.outputs import TaskMetrics
from agentensemble.tracing._records import Record


@dataclass
class OpenReview:
    task_index: int | None
    key: tuple[str, str | None, str]
    started: float
    record: Record | None
    wait: float = 0.0
    revised: str | None = None  # a reviewer's edit of the task description, before it ran


@dataclass
class Counters:
    """A task's metrics while it runs (plain attributes: cheap to bump on every turn)."""

    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    review_wait_seconds: float = 0.0
    retries: int = 0

    def fields(self) -> dict[str, float | int]:
        """The metrics as the trace records them (validated with the rest of the trace)."""
        return {
            "model_seconds": self.model_seconds,
            "tool_seconds": self.tool_seconds,
            "review_wait_seconds": self.review_wait_seconds,
            "retries": self.retries,
        }

    def metrics(self) -> TaskMetrics:
        return TaskMetrics(
            model_seconds=self.model_seconds,
            tool_seconds=self.tool_seconds,
            review_wait_seconds=self.review_wait_seconds,
            retries=self.retries,
        )


@dataclass
class TaskState:
    """A task's counters (always) and its trace record (unless capture is off)."""

    metrics: Counters = field(default_factory=lambda: Counters())
    record: Record | None = None
    position: int = -1  # of the record in the trace's tasks (what a prompt reference names)


__all__ = ["Counters", "OpenReview", "TaskState"]
