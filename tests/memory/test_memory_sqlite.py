"""SQLiteMemory specifics: where the file may live, and several processes on one file."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentensemble.memory import SQLiteMemory

WRITER = """
import sys
from agentensemble.memory import SQLiteMemory
store = SQLiteMemory(sys.argv[1])
for n in range(int(sys.argv[3])):
    store.add("shared", f"process {sys.argv[2]} wrote note {n}")
"""


def python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_path_in_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"folder .*nowhere.* does not exist"):
        SQLiteMemory(tmp_path / "nowhere" / "memory.sqlite")


def test_a_folder_is_not_a_store_path(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError, match="is a folder"):
        SQLiteMemory(tmp_path)


def test_a_file_that_is_no_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just text, not SQLite " * 100)
    with pytest.raises(OSError, match=r"notes\.txt"):
        SQLiteMemory(path)


def test_in_memory_store_is_shared_by_its_threads() -> None:
    store = SQLiteMemory(":memory:")
    thread = threading.Thread(target=store.add, args=("kb", "written from a thread"))
    thread.start()
    thread.join(timeout=30)
    assert [e.text for e in store.entries("kb")] == ["written from a thread"]
    assert SQLiteMemory(":memory:").entries("kb") == []  # another store, another database


def test_a_second_process_sees_the_first_ones_memory(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    SQLiteMemory(path).add("customer-7", "Customer 7 is allergic to peanuts")
    found = python(
        "-c",
        "import sys; from agentensemble.memory import SQLiteMemory; "
        "print(SQLiteMemory(sys.argv[1]).search('customer-7', 'peanuts allergy')[0].text)",
        str(path),
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "Customer 7 is allergic to peanuts"


def test_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    SQLiteMemory(path)  # schema in place; the writers also race to create it safely
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(n), "60"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for writer in writers:
        _, error = writer.communicate(timeout=120)
        assert writer.returncode == 0, error
    texts = {e.text for e in SQLiteMemory(path).entries("shared")}
    assert len(texts) == 240
    assert "process 3 wrote note 59" in texts


def test_writer_processes_creating_a_new_file_together_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(n), "20"], text=True)
        for n in range(3)
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    assert len(SQLiteMemory(path).entries("shared")) == 60
