"""Crew files with memory: ``memory:`` (a SQLite file beside the crew file, or Postgres through
an environment variable), tasks' ``memory: [scopes]``, ``knowledge:`` paths relative to the crew
file; bad values are errors at their line. The whole thing end to end through
``agentensemble run --session`` in a subprocess, over the local OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentensemble.config import ConfigFileError, load_crew
from agentensemble.memory import HashingEmbedder, Knowledge, SQLiteMemory
from agentensemble.testing import OpenAICompatibleServer
from agentensemble.testing.openai_server import TextReply

CrewFile = Callable[..., Path]
REPO_ROOT = Path(__file__).resolve().parents[2]  # this tree's code in the subprocess

CREW = """
model: openai/gpt-4o-mini
memory: data/memory.sqlite
knowledge: [handbook.md, {paths: [faq], scope: faq}]
agents:
  helper: {role: Helper, goal: Help customers}
tasks:
  answer:
    description: Answer {question}
    agent: helper
    memory: [customer-42]
    knowledge: [policies.md]
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "faq").mkdir()
    (tmp_path / "handbook.md").write_text("# Handbook\n\nRefunds take five days.\n")
    (tmp_path / "faq" / "shipping.md").write_text("Shipping is free above 50 euros.\n")
    (tmp_path / "policies.md").write_text("Kettles carry a two year warranty.\n")
    return tmp_path


def test_memory_and_knowledge_paths_are_the_crew_files_folders(
    crew_file: CrewFile, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/")  # not the crew file's folder: relative paths must not use it
    ensemble = load_crew(crew_file(CREW))

    assert isinstance(ensemble.memory, SQLiteMemory)
    assert ensemble.memory.path == folder / "data" / "memory.sqlite"
    loose, faq = ensemble.knowledge
    assert loose.paths == [folder / "handbook.md"] and loose.scope == "knowledge"
    assert faq.paths == [folder / "faq"] and faq.scope == "faq"
    (task,) = ensemble.tasks
    assert task.memory == ["customer-42"]
    (own,) = task.knowledge
    assert isinstance(own, Knowledge) and own.paths == [folder / "policies.md"]


def test_one_scope_needs_no_brackets(crew_file: CrewFile, folder: Path) -> None:
    text = CREW.replace("memory: [customer-42]", "memory: customer-42")
    assert load_crew(crew_file(text)).tasks[0].memory == ["customer-42"]


def test_the_long_form_takes_an_embedder(crew_file: CrewFile, folder: Path) -> None:
    text = CREW.replace(
        "memory: data/memory.sqlite", "memory: {sqlite: data/memory.sqlite, embedder: hashing}"
    )
    ensemble = load_crew(crew_file(text))

    assert isinstance(ensemble.memory.embedder, HashingEmbedder)


def test_a_postgres_url_comes_from_the_environment(
    crew_file: CrewFile, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The URL (with its password) is read from the variable and never written in the file;
    an unreachable server is an error at the key's line, its password masked."""
    monkeypatch.setenv("CREW_MEMORY_URL", "postgresql://app:hunter2-secret@127.0.0.1:1/agents")
    text = CREW.replace("memory: data/memory.sqlite", "memory: {url_env: CREW_MEMORY_URL}")
    with pytest.raises(ConfigFileError) as caught:
        load_crew(crew_file(text))

    message = str(caught.value)
    assert ":2: memory.url_env: memory store: cannot connect to Postgres" in message
    assert "hunter2-secret" not in message


def test_url_env_opens_a_real_postgres(
    crew_file: CrewFile, folder: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    from agentensemble.memory import PostgresMemory

    monkeypatch.setenv("CREW_MEMORY_URL", postgres_url)
    text = CREW.replace("memory: data/memory.sqlite", "memory: {url_env: CREW_MEMORY_URL}")
    ensemble = load_crew(crew_file(text))

    assert isinstance(ensemble.memory, PostgresMemory)
    ensemble.memory.add("customer-42", "Prefers email")
    assert [e.text for e in ensemble.memory.entries("customer-42")] == ["Prefers email"]
    ensemble.memory.close()


BAD = [
    ("memory: missing/memory.sqlite", ":2: memory: memory store ", "does not exist"),
    ("memory: [a, b]", ":2: memory: ", "expected a SQLite file or a mapping"),
    ("memory: {sqlite: a.sqlite, url_env: X}", ":2: memory: ", "names one store"),
    ("memory: {sqlite: '  '}", ":2: memory.sqlite: ", "non-blank"),
    ("memory: {sqlit: a.sqlite}", ":2: memory.sqlit: ", "memory has no setting 'sqlit'"),
    ("memory: {url_env: CREW_UNSET_VARIABLE}", ":2: memory.url_env: ", "is not set"),
    ("memory: postgresql://app:pw@db/agents", ":2: memory: ", "holds a password"),
    ("memory: {sqlite: m.sqlite, embedder: magic}", ":2: memory.embedder: ", "hashing"),
    ("memory: data", ":2: memory: memory store ", "is a folder"),
]


@pytest.mark.parametrize(("line", "where", "problem"), BAD)
def test_a_bad_store_is_an_error_at_its_line(
    crew_file: CrewFile, folder: Path, line: str, where: str, problem: str
) -> None:
    with pytest.raises(ConfigFileError) as caught:
        load_crew(crew_file(CREW.replace("memory: data/memory.sqlite", line)))

    assert where in str(caught.value) and problem in str(caught.value)
    assert "pw@" not in str(caught.value)


BAD_TASKS = [
    ("memory: [customer-42]", "memory: ['  ']", ":10: tasks.answer.memory", "non-blank"),
    ("memory: [customer-42]", "memory: {a: b}", ":10: tasks.answer.memory", "expected a list"),
    (
        "knowledge: [policies.md]",
        "knowledge: [nowhere.md]",
        ":11: tasks.answer.knowledge[0]",
        "does not exist",
    ),
    ("knowledge: [handbook.md", "knowledge: [{scope: x}", ":3: knowledge[0]", "needs paths"),
    (
        "knowledge: [handbook.md",
        "knowledge: [{paths: [faq], scope: ' '}",
        ":3: knowledge[0]",
        "scope",
    ),
]


@pytest.mark.parametrize(("old", "new", "where", "problem"), BAD_TASKS)
def test_bad_scopes_and_knowledge_are_errors_at_their_line(
    crew_file: CrewFile, folder: Path, old: str, new: str, where: str, problem: str
) -> None:
    with pytest.raises(ConfigFileError) as caught:
        load_crew(crew_file(CREW.replace(old, new)))

    assert where in str(caught.value) and problem in str(caught.value), caught.value


def test_task_memory_without_a_store_says_what_to_add(crew_file: CrewFile, folder: Path) -> None:
    with pytest.raises(ConfigFileError) as caught:
        load_crew(crew_file(CREW.replace("memory: data/memory.sqlite\n", "")))

    assert ":9: tasks.answer.memory: " in str(caught.value)
    assert "memory: memory.sqlite" in str(caught.value)


def test_from_dict_resolves_against_the_working_directory(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(folder)
    ensemble = load_crew(
        {
            "memory": "data/memory.sqlite",
            "knowledge": ["handbook.md"],
            "tasks": [{"description": "Answer", "memory": ["c"]}],
        }
    )
    assert Path(ensemble.memory.path).resolve() == folder / "data" / "memory.sqlite"


# -- end to end: the command line, two processes, one store -------------------------------------

E2E_CREW = """
model: {{model: openai/test-model, api_base: "{base}", api_key: sk-test-crew-memory}}
memory: memory.sqlite
knowledge: [handbook.md]
agents:
  helper: {{role: Helper, goal: Help customers}}
tasks:
  answer:
    description: "Answer the customer: {{question}}"
    agent: helper
    memory: [customers]
"""


def _cli(crew: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentensemble", "run", str(crew), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO_ROOT)},
    )


def _user_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"] if m["role"] != "system")


def test_run_with_a_session_continues_the_conversation_across_processes(tmp_path: Path) -> None:
    (tmp_path / "handbook.md").write_text("Refunds are paid within PELICAN days.\n")
    with OpenAICompatibleServer() as server:
        count = iter(range(1, 100))
        server.set_responder(lambda body: TextReply(f"reply {next(count)} on the name"))
        crew = tmp_path / "crew.yaml"
        crew.write_text(E2E_CREW.format(base=server.base_url))

        first = _cli(crew, "-i", "question=I am Ada, how long do refunds take?", "--session", "ada")
        second = _cli(crew, "-i", "question=What was my name?", "--session", "ada", "--json")
        other = _cli(crew, "-i", "question=What was my name?", "--session", "bob")
        bodies = server.requests

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert other.returncode == 0, other.stderr
    assert "PELICAN" in _user_text(bodies[0])  # knowledge beside the crew file, cwd elsewhere
    again = bodies[1]["messages"]
    assert {
        "role": "user",
        "content": "Answer the customer: I am Ada, how long do refunds take?",
    } in again
    assert {
        "role": "assistant",
        "content": "reply 1 on the name",
    } in again  # the session's earlier turn
    assert all(m["role"] != "system" or "reply 1" not in str(m["content"]) for m in again)
    assert json.loads(second.stdout)["raw"] == "reply 2 on the name"
    # bob's session is not ada's: no earlier exchange; the task scope is shared, as configured
    assert {"role": "assistant", "content": "reply 1 on the name"} not in bodies[2]["messages"]
    assert "reply 1" in _user_text(bodies[2])  # task memory: the scope customers
    store = SQLiteMemory(tmp_path / "memory.sqlite")
    texts = ["reply 1 on the name", "reply 2 on the name", "reply 3 on the name"]
    assert [e.text for e in store.entries("customers")] == texts


def test_a_session_without_a_store_is_a_usage_error(tmp_path: Path) -> None:
    crew = tmp_path / "crew.yaml"
    crew.write_text("tasks:\n  answer: {description: Answer}\n")

    done = _cli(crew, "--model", "scripted", "--session", "ada")
    blank = _cli(crew, "--model", "scripted", "--session", " ")

    assert done.returncode == 2 and "memory: memory.sqlite" in done.stderr
    assert blank.returncode == 2 and "--session needs a non-blank name" in blank.stderr
