"""Workflows: the order in which an ensemble's tasks run."""

from __future__ import annotations

from enum import Enum


class Workflow(str, Enum):
    """How tasks are ordered. Sequential runs them in list order, threading declared context."""

    SEQUENTIAL = "sequential"


__all__ = ["Workflow"]
