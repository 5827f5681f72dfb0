"""Stores for the memory tests: SQLite files in a temporary folder and a real Postgres started
from the pgserver wheel (once per session; a fresh database per test)."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentensemble.memory import HashingEmbedder, PostgresMemory, SQLiteMemory

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    import pgserver

    with tempfile.TemporaryDirectory(prefix="agentensemble-memory-pg-") as directory:
        server = pgserver.get_server(directory, cleanup_mode="stop")
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the session's server."""
    import psycopg

    name = f"memory_test_{next(_databases)}"
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name}")
        connection.execute(f"CREATE DATABASE {name}")
    return postgres_server.replace("/postgres?", f"/{name}?", 1)


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
