"""Two real processes syncing the same Knowledge into one store at the same moment: every file's
chunks are there exactly once (SQLite file and real Postgres), and each file was indexed by one
of them. Then a changed file, synced by both again, is replaced once, not doubled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentensemble.memory import PostgresMemory, SQLiteMemory

WORKER = Path(__file__).with_name("_knowledge_sync_worker.py")
REPO_ROOT = Path(__file__).resolve().parents[2]
FILES = 40


def paragraph(file: int, number: int) -> str:
    return f"File {file} paragraph {number}: " + "words about kettles and refunds " * 12


def write_files(folder: Path, version: str = "") -> None:
    for file in range(FILES):
        text = "\n\n".join(paragraph(file, n) + version for n in range(3))
        (folder / f"doc{file:02d}.md").write_text(text)


def sync_in_two_processes(store: str, folder: Path, go: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO_ROOT)}
    go.unlink(missing_ok=True)
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), store, str(folder), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    for worker in workers:  # both imported and connected: now they start together
        assert worker.stdout is not None
        line = worker.stdout.readline()
        assert line.strip() == "ready", worker.stderr.read() if worker.stderr else line
    go.touch()
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "memory.sqlite")
    url: str = request.getfixturevalue("postgres_url")
    return url


def open_store(location: str) -> Any:
    if location.startswith("postgresql://"):
        return PostgresMemory(location)
    return SQLiteMemory(location)


def chunks_by_file(store: Any) -> Counter[tuple[str, int]]:
    return Counter(
        (Path(e.metadata["source"]).name, int(e.metadata["chunk"])) for e in store.entries("kb")
    )


def test_two_processes_syncing_at_once_index_every_file_once(
    store_location: str, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    write_files(folder)
    open_store(store_location).close()  # the schema exists before the race

    reports = sync_in_two_processes(store_location, folder, tmp_path / "go")

    store = open_store(store_location)
    counted = chunks_by_file(store)
    assert len({name for name, _ in counted}) == FILES
    assert max(counted.values()) == 1, [key for key, n in counted.items() if n > 1][:5]
    added = [Path(p).name for report in reports for p in report["added"]]
    assert sorted(added) == sorted(f"doc{i:02d}.md" for i in range(FILES))  # each by one

    write_files(folder, version=" (revised)")
    reports = sync_in_two_processes(store_location, folder, tmp_path / "go")

    counted_again = chunks_by_file(store)
    assert counted_again == counted  # replaced, not doubled
    assert all("(revised)" in e.text for e in store.entries("kb"))
    updated = [p for report in reports for p in report["updated"]]
    assert len(updated) == FILES
    store.close()
