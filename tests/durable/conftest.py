"""A real Postgres for the durable tests: started once per session from the pgserver package
(Postgres binaries in a wheel), in a temporary directory, stopped at the end."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    import pgserver

    with tempfile.TemporaryDirectory(prefix="agentensemble-pg-") as directory:
        server = pgserver.get_server(directory, cleanup_mode="stop")
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the session's server."""
    import psycopg

    name = f"durable_test_{next(_databases)}"
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name}")
        connection.execute(f"CREATE DATABASE {name}")
    return postgres_server.replace("/postgres?", f"/{name}?", 1)


@pytest.fixture(params=["sqlite", "postgres"])
def any_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database: a SQLite file, then a real Postgres one (the test runs on both)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/runs.sqlite"
    return str(request.getfixturevalue("postgres_url"))
