"""Stores for the memory tests: SQLite files in a temporary folder and the session's real
Postgres (tests/conftest.py: one pgserver for every suite, a fresh database per test)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentensemble.memory import HashingEmbedder, PostgresMemory, SQLiteMemory

StoreFactory = Callable[..., Any]


@pytest.fixture(params=["sqlite", "sqlite+hashing", "postgres", "postgres+hashing"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Builds stores of one kind, all on the same database (as several processes would)."""
    kind: str = request.param
    embedder = HashingEmbedder() if kind.endswith("+hashing") else None
    made: list[Any] = []
    if kind.startswith("postgres"):
        url = request.getfixturevalue("postgres_url")

        def factory(**kwargs: Any) -> Any:
            store = PostgresMemory(url, embedder=kwargs.get("embedder", embedder))
            made.append(store)
            return store
    else:
        path = tmp_path / "memory.sqlite"

        def factory(**kwargs: Any) -> Any:
            store = SQLiteMemory(path, embedder=kwargs.get("embedder", embedder))
            made.append(store)
            return store

    yield factory
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> Any:
    return make_store()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
