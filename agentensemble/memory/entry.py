"""MemoryEntry: one remembered text, as every store returns it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MemoryEntry(BaseModel):
    """One entry of a scope. ``score`` is set by ``search`` (higher is better), else None."""

    model_config = ConfigDict(frozen=True)

    id: str
    """Unique id given by the store (``store.delete(entry.id)``)."""
    scope: str
    """The scope it was written to; scopes are matched exactly."""
    text: str
    """What was remembered (secrets already redacted when it was stored)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """JSON data stored with it (knowledge chunks carry their source file)."""
    created_at: datetime
    """When it was written (UTC)."""
    score: float | None = None
    """How well it matched the query; only on search results."""


__all__ = ["MemoryEntry"]
