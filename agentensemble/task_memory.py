"""The seam where a task meets memory: what to show the agent before it, what to keep after it.

The executor and the workflows see memory only through ``TaskMemory``, as they see durability
only through ``steps.py``: a run with memory, knowledge or a session gives each task an object
built by ``agentensemble.memory`` (``memory/_task_memory.py``); without one nothing here runs.
It imports nothing from agentensemble, so every layer may use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import field
from typing import Any, Protocol

from agentensemble._base.dataclass import dataclass


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


@dataclasses.dataclass(frozen=True)
class MemoryScope:
    """One memory scope of a task, with what is recalled from it and what is written to it.

    ``Task(memory=["notes"])`` is ``Task(memory=[MemoryScope("notes")])``: the task's filled
    description is the recall query and its final output is written back. ``name`` and a text
    ``query`` may use ``{variables}``, filled from the run's inputs like every other template
    (``MemoryScope("customer-{customer}")``); a variable the inputs lack is refused before any
    model call.

    ``write``: ``True`` writes the output, ``False`` makes the scope read-only (recalled, never
    written), a callable gets the output text and returns what to write (``None`` or blank:
    nothing). ``query``: ``None`` for the task's description, a text (a template), or a callable
    given the filled description and returning the query.
    """

    name: str
    write: bool | Callable[[str], str | None] = True
    query: str | Callable[[str], str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"MemoryScope needs a non-blank scope name; got {self.name!r}")
        if not isinstance(self.write, bool) and not callable(self.write):
            raise ValueError(
                f"MemoryScope({self.name!r}, write=...) takes True, False (read-only) or a "
                f"callable picking what to write from the output; got {self.write!r}"
            )
        query = self.query
        if (
            query is not None
            and not callable(query)
            and not (isinstance(query, str) and query.strip())
        ):
            raise ValueError(
                f"MemoryScope({self.name!r}, query=...) takes a non-blank text or a callable "
                f"given the task's description; got {query!r}"
            )


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
    "MemoryScope",
    "RecalledItem",
    "Recollection",
    "TaskMemory",
    "run_memory_store",
    "use_run_memory_store",
]
