"""Memory across runs, sessions and knowledge from files (docs/memory.md).

Names are loaded on first use, so ``import agentensemble.memory`` stays cheap and never imports
a driver (psycopg) or litellm until a store or embedder that needs one is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentensemble._base.lazy import lazy_exports

if TYPE_CHECKING:
    from agentensemble.memory.embedders import Embedder, HashingEmbedder, LiteLLMEmbedder
    from agentensemble.memory.entry import MemoryEntry
    from agentensemble.memory.knowledge import Knowledge
    from agentensemble.memory.postgres import PostgresMemory
    from agentensemble.memory.sqlite import SQLiteMemory
    from agentensemble.memory.store import MemoryStore
    from agentensemble.memory.tool import MemoryTool
    from agentensemble.task_memory import MemoryScope

_LAZY: dict[str, str] = {
    "Embedder": "agentensemble.memory.embedders",
    "HashingEmbedder": "agentensemble.memory.embedders",
    "LiteLLMEmbedder": "agentensemble.memory.embedders",
    "MemoryEntry": "agentensemble.memory.entry",
    "Knowledge": "agentensemble.memory.knowledge",
    "PostgresMemory": "agentensemble.memory.postgres",
    "SQLiteMemory": "agentensemble.memory.sqlite",
    "MemoryStore": "agentensemble.memory.store",
    "MemoryTool": "agentensemble.memory.tool",
    "MemoryScope": "agentensemble.task_memory",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "Knowledge",
    "LiteLLMEmbedder",
    "MemoryEntry",
    "MemoryScope",
    "MemoryStore",
    "MemoryTool",
    "PostgresMemory",
    "SQLiteMemory",
]
