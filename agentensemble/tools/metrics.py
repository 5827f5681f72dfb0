"""Per-tool call counters: successes, failures, errors and time spent. Thread-safe."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import field
from datetime import timedelta
from enum import Enum

from agentensemble._base.dataclass import dataclass


class CallOutcome(str, Enum):
    """How one call ended, for the counters."""

    SUCCESS = "success"
    FAILURE = "failure"  # a failure result, ToolExecutionError, bad arguments, rejected approval
    ERROR = "error"  # any other exception raised by the tool


@dataclass
class ToolMetrics:
    """Counters for one tool. ``calls == successes + failures + errors``.

    ``failures`` are calls the tool (or the framework) failed on purpose: failure results,
    ``ToolExecutionError``/``ToolArgumentsError``, invalid arguments, a rejected approval.
    ``errors`` are unexpected exceptions from the tool's code.
    """

    calls: int = 0
    successes: int = 0
    failures: int = 0
    errors: int = 0
    total_duration: timedelta = timedelta(0)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, outcome: CallOutcome, duration: float) -> None:
        """Count one finished call that took ``duration`` seconds."""
        with self._lock:
            self.calls += 1
            if outcome is CallOutcome.SUCCESS:
                self.successes += 1
            elif outcome is CallOutcome.FAILURE:
                self.failures += 1
            else:
                self.errors += 1
            self.total_duration += timedelta(seconds=duration)

    @property
    def average_duration(self) -> timedelta:
        """Mean time per call (zero before the first call)."""
        with self._lock:
            return self.total_duration / self.calls if self.calls else timedelta(0)

    def __getstate__(self) -> dict[str, object]:
        """Pickle and deepcopy take the counters, not the lock (a lock cannot be pickled: an
        ``EnsembleOutput`` of any run with tools could be neither pickled nor deep-copied)."""
        with self._lock:
            return {name: value for name, value in self.__dict__.items() if name != "_lock"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.__dict__["_lock"] = threading.Lock()

    def snapshot(self) -> ToolMetrics:
        """A consistent copy, safe to read while calls keep running."""
        with self._lock:
            return ToolMetrics(
                calls=self.calls,
                successes=self.successes,
                failures=self.failures,
                errors=self.errors,
                total_duration=self.total_duration,
            )


class ToolMetricsRegistry:
    """Metrics of many tools, keyed by tool name (one per run, carried by the ToolContext)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._metrics: dict[str, ToolMetrics] = {}

    def for_tool(self, name: str) -> ToolMetrics:
        """The metrics of ``name``, created empty on first use."""
        with self._lock:
            metrics = self._metrics.get(name)
            if metrics is None:
                metrics = self._metrics[name] = ToolMetrics()
            return metrics

    def record(self, name: str, outcome: CallOutcome, duration: float) -> None:
        """Count one call of tool ``name``."""
        self.for_tool(name).record(outcome, duration)

    def snapshot(self) -> dict[str, ToolMetrics]:
        """Copies of every tool's metrics, by name."""
        with self._lock:
            items = list(self._metrics.items())
        return {name: metrics.snapshot() for name, metrics in items}

    def __getitem__(self, name: str) -> ToolMetrics:
        with self._lock:
            return self._metrics[name]

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._metrics

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._metrics))

    def __len__(self) -> int:
        with self._lock:
            return len(self._metrics)

    def __repr__(self) -> str:
        return f"ToolMetricsRegistry({self.snapshot()!r})"


__all__ = ["CallOutcome", "ToolMetrics", "ToolMetricsRegistry"]
