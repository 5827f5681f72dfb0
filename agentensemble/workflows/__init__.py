"""Workflows: the order in which an ensemble's tasks run."""

from __future__ import annotations

from enum import Enum


class Workflow(str, Enum):
    """How tasks are ordered.

    SEQUENTIAL runs them in list order; PARALLEL runs each task as soon as its ``context`` tasks
    have completed; HIERARCHICAL gives the tasks to a manager agent that delegates to workers.
    """

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    HIERARCHICAL = "hierarchical"


class ParallelErrorStrategy(str, Enum):
    """What a PARALLEL run does when a task fails.

    FAIL_FAST cancels the running tasks and raises at once; CONTINUE_ON_ERROR lets independent
    branches finish, skips what depends on the failure, then raises ParallelExecutionError.
    """

    FAIL_FAST = "fail_fast"
    CONTINUE_ON_ERROR = "continue_on_error"


__all__ = ["ParallelErrorStrategy", "Workflow"]
