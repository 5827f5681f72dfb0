"""The seam where a task meets memory: what to show the agent before it, what to keep after it.

The executor and the workflows see memory only through ``TaskMemory``, as they see durability
only through ``steps.py``: a run with memory, knowledge or a session gives each task an object
built by ``agentensemble.memory`` (``memory/_task_memory.py``); without one nothing here runs.
It imports nothing from agentensemble, so every layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import field
from typing import Any, Protocol

from agentensemble._dataclass import dataclass


@dataclass(frozen=True)
class RecalledItem:
    """One retrieved entry as the trace and the events show it."""

    source: str
    """``memory``, ``knowledge`` or ``session``."""
    scope: str
    entry_id: str
    text: str
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Recollection:
    """What the agent is shown before the task.

    ``history``: earlier exchanges of the session as user/assistant messages, oldest first.
    ``context``: retrieved memory and knowledge as one delimited block of untrusted data, sent
    in a user-role message (never the system prompt); None when nothing was found.
    """

    history: list[dict[str, str]] = field(default_factory=list)
    context: str | None = None
    items: list[RecalledItem] = field(default_factory=list)
    query: str = ""
    scopes: list[str] = field(default_factory=list)
    session: str | None = None

    @property
    def empty(self) -> bool:
        return not self.history and self.context is None


class TaskMemory(Protocol):
    """Memory as one task sees it."""

    async def recall(self, description: str) -> Recollection:
        """What to show the agent before the task whose (filled) description is given."""
        ...

    async def remember(self, description: str, output: str) -> None:
        """Keep the task's final output (after any review edit) in its scopes and session."""
        ...


_run_store: ContextVar[Any] = ContextVar("agentensemble_memory_store", default=None)


def run_memory_store() -> Any:
    """The ``Ensemble(memory=...)`` store of the run in progress, or None (``MemoryTool`` without
    a store of its own uses it)."""
    return _run_store.get()


@contextmanager
def use_run_memory_store(store: Any) -> Iterator[None]:
    token = _run_store.set(store)
    try:
        yield
    finally:
        _run_store.reset(token)


__all__ = [
    "RecalledItem",
    "Recollection",
    "TaskMemory",
    "run_memory_store",
    "use_run_memory_store",
]
