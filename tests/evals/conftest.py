"""The durable evaluation tests use the durable suite's real Postgres (tests/durable)."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator

import pytest

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    pgserver = pytest.importorskip("pgserver")
    with tempfile.TemporaryDirectory(prefix="agentensemble-evals-pg-") as directory:
        server = pgserver.get_server(directory, cleanup_mode="stop")
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the session's server."""
    import psycopg

    name = f"evals_test_{next(_databases)}"
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name}")
        connection.execute(f"CREATE DATABASE {name}")
    return postgres_server.replace("/postgres?", f"/{name}?", 1)
