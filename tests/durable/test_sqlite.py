"""SQLite for durable runs: WAL mode in the file, and each commit's wait for the disk set on
the connections DBOS opens (``sqlite_sync``), for that file only."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from agentensemble.durable._sqlite import prepare_sqlite, sqlite_path
from agentensemble.errors import ConfigurationError

NORMAL, FULL = 1, 2  # PRAGMA synchronous values


def synchronous_of(url: str) -> int:
    engine = sa.create_engine(url)  # as DBOS opens it: a SQLAlchemy engine of its own
    try:
        with engine.connect() as connection:
            return int(connection.exec_driver_sql("PRAGMA synchronous").scalar_one())
    finally:
        engine.dispose()


@pytest.mark.parametrize(("sync", "expected"), [("normal", NORMAL), ("full", FULL)])
def test_every_connection_to_the_runs_database_gets_its_sync_setting(
    tmp_path: Path, sync: str, expected: int
) -> None:
    url = f"sqlite:///{tmp_path}/runs-{sync}.sqlite"
    prepare_sqlite(url, sync)
    assert synchronous_of(url) == expected
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
    engine.dispose()


def test_other_sqlite_files_keep_their_own_setting(tmp_path: Path) -> None:
    prepare_sqlite(f"sqlite:///{tmp_path}/runs.sqlite", "normal")
    assert synchronous_of(f"sqlite:///{tmp_path}/someone-elses.sqlite") == FULL


def test_a_misspelt_setting_is_refused_before_anything_is_opened(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="sqlite_sync must be 'normal' or 'full'"):
        prepare_sqlite(f"sqlite:///{tmp_path}/runs.sqlite", "fast")
    assert not (tmp_path / "runs.sqlite").exists()


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///runs.sqlite", "runs.sqlite"),
        ("sqlite:////tmp/a.sqlite?timeout=5", "/tmp/a.sqlite"),
        ("sqlite:///:memory:", None),
        ("postgresql://u@h/db", None),
    ],
)
def test_the_file_of_a_database_url(url: str, path: str | None) -> None:
    assert sqlite_path(url) == path
