"""``agentensemble memory``: list, search, prune, clear on a real store, in a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentensemble.cli.memory_command import duration
from agentensemble.memory import SQLiteMemory


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentensemble", "memory", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "memory.sqlite"
    store = SQLiteMemory(path)
    for n in range(5):
        store.add("customer-42", f"ticket {n}: the kettle leaks")
    store.add("customer-42", "evil \x1b[31mred\x1b[0m text\nsecond line")
    store.add("customer-7", "prefers phone calls")
    return path


def test_list_shows_scopes_then_one_scopes_entries(store_path: Path) -> None:
    scopes = cli("list", "--store", str(store_path))
    assert scopes.returncode == 0, scopes.stderr
    assert scopes.stdout.splitlines() == ["customer-42  6 entries", "customer-7  1 entries"]
    entries = cli("list", "customer-42", "--last", "2", "--json", "--store", str(store_path))
    payload = json.loads(entries.stdout)
    assert [e["text"][:8] for e in payload] == ["ticket 4", "evil \\x1"]


def test_stored_control_characters_cannot_drive_the_terminal(store_path: Path) -> None:
    shown = cli("list", "customer-42", env={"AGENTENSEMBLE_MEMORY": str(store_path)})
    assert "\x1b" not in shown.stdout
    assert "evil \\x1b[31mred\\x1b[0m text\\nsecond line" in shown.stdout
    assert len(shown.stdout.splitlines()) == 6


def test_search_prune_and_clear(store_path: Path) -> None:
    found = cli(
        "search", "customer-42", "leaking kettle", "--limit", "2", "--store", str(store_path)
    )
    assert found.returncode == 0 and len(found.stdout.splitlines()) == 2
    assert "score" in found.stdout
    pruned = cli("prune", "customer-42", "--keep-last", "2", "--store", str(store_path))
    assert pruned.stdout.strip() == "removed 4 entries"
    refused = cli("clear", "customer-7", "--store", str(store_path))
    assert refused.returncode == 2 and "--yes" in refused.stderr
    cleared = cli("clear", "customer-7", "--yes", "--json", "--store", str(store_path))
    assert json.loads(cleared.stdout) == {"scope": "customer-7", "removed": 1}
    assert len(SQLiteMemory(store_path).entries("customer-42")) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("list", "--store", "{missing}"), "no memory store at"),
        (("prune", "kb", "--store", "{store}"), "--keep-last"),
        (("prune", "kb", "--older-than", "soon", "--store", "{store}"), "no duration"),
        (("search", " ", "q", "--store", "{store}"), "blank"),
        (("search", "kb", "q", "--limit", "0", "--store", "{store}"), "limit"),
    ],
)
def test_bad_usage_exits_2_and_creates_nothing(
    store_path: Path, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    missing = tmp_path / "missing.sqlite"
    filled = [a.format(missing=missing, store=store_path) for a in args]
    done = cli(*filled)
    assert done.returncode == 2
    assert message in done.stderr
    assert not missing.exists()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("45m", 2700), ("12h", 43200), ("30d", 2592000), ("2w", 1209600)],
)
def test_durations(text: str, seconds: int) -> None:
    assert duration(text).total_seconds() == seconds


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("search", "customer-42", "zebra"), "nothing in scope 'customer-42' matches 'zebra'"),
        (("list", "customer-99"), "no entries in scope 'customer-99'"),
    ],
)
def test_nothing_found_is_said_not_left_blank(
    store_path: Path, args: tuple[str, ...], said: str
) -> None:
    """Issue 43: a search with no match printed nothing, like a command that did nothing."""
    done = cli(*args, "--store", str(store_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == said
    as_json = cli(*args, "--json", "--store", str(store_path))
    assert json.loads(as_json.stdout) == []  # scripts still get the plain answer
