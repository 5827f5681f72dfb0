"""The local embedder: WordLlama's model loaded from the files its wheel ships, with no network,
and the stores' default when it is installed, so recall finds what a task meant even when it
shares no word with it. (tests/conftest.py sets ``AGENTENSEMBLE_EMBEDDER=lexical`` for the rest
of the suite; these tests set it back.)"""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("wordllama", reason="the local-embeddings extra is not installed")

from agentensemble import LLM, Agent, Ensemble, Task
from agentensemble.memory import SQLiteMemory
from agentensemble.memory.embedders import (
    EMBEDDER_VARIABLE,
    HashingEmbedder,
    LocalEmbedder,
    default_embedder,
)
from agentensemble.testing import OpenAICompatibleServer


@pytest.fixture
def auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EMBEDDER_VARIABLE, "auto")


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def test_the_model_loads_from_the_wheel_without_the_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the local embedder reached for the network: {args!r}")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)

    first, again, other = LocalEmbedder().embed(["deploy on Friday", "deploy on Friday", "tea"])

    assert len(first) == 256 and first == again and first != other
    assert math.isclose(math.sqrt(sum(x * x for x in first)), 1.0, rel_tol=1e-6)
    assert len(LocalEmbedder(dims=64).embed(["x"])[0]) == 64


@pytest.mark.parametrize(
    ("setting", "made"),
    [("auto", LocalEmbedder), ("", LocalEmbedder), ("local", LocalEmbedder), ("lexical", None)],
)
def test_a_store_given_no_embedder_uses_the_local_one_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch, setting: str, made: type | None
) -> None:
    monkeypatch.setenv(EMBEDDER_VARIABLE, setting)
    store = SQLiteMemory(":memory:")
    assert (type(store.embedder) if made else store.embedder) == (made or None)
    assert SQLiteMemory(":memory:", embedder=None).embedder is None  # None: lexical, always
    hashing = HashingEmbedder()
    assert SQLiteMemory(":memory:", embedder=hashing).embedder is hashing


def test_a_bad_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EMBEDDER_VARIABLE, "semantic")
    with pytest.raises(ValueError, match=f"{EMBEDDER_VARIABLE}='semantic'"):
        default_embedder()
    with pytest.raises(ValueError, match="dims must be 64, 128 or 256"):
        LocalEmbedder(dims=300)


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ("feedback on how the essay begins", "The critic says the opening paragraph drags"),
        ("how did sales do last quarter?", "Quarterly revenue grew by twelve percent"),
        ("when do we ship new releases?", "Deployments happen on Tuesdays"),
        ("where should credentials be stored?", "Secrets live in the vault"),
    ],
)
def test_recall_finds_what_was_meant_with_no_word_in_common(
    embedder: LocalEmbedder, query: str, answer: str
) -> None:
    store = SQLiteMemory(":memory:", embedder=embedder)
    for text in (
        "The critic says the opening paragraph drags and needs a hook",
        "Quarterly revenue grew by twelve percent in Europe",
        "The cat sleeps on the warm windowsill every afternoon",
        "Deployments happen on Tuesdays after the standup",
        "Secrets live in the vault; never paste a key into a chat",
    ):
        store.add("notes", text)
    lexical = SQLiteMemory(":memory:", embedder=None)
    lexical.add("notes", answer)

    assert store.search("notes", query, limit=1)[0].text.startswith(answer)
    assert lexical.search("notes", query) == []  # no shared word: lexical search finds nothing


@pytest.fixture
def server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer() as running:
        yield running


def test_a_writer_recalls_the_critic_s_remarks_by_default(
    auto: None, server: OpenAICompatibleServer, tmp_path: Path
) -> None:
    """The first-hour writer-critic loop: the writer's task says nothing the critic wrote, and
    the default store (the local embedder) still shows the remarks first."""
    store = SQLiteMemory(tmp_path / "memory.sqlite")
    assert isinstance(store.embedder, LocalEmbedder)
    store.add("feedback", "Critic: the opening paragraph drags; start with a concrete scene")
    store.add("feedback", "Invoice 2291 was paid by bank transfer")
    llm = LLM(model="openai/test-model", api_base=server.base_url, api_key="sk-local-embedder")
    writer = Agent(role="Writer", goal="Write", llm=llm)
    task = Task(
        description="Write the first lines of an essay about tea that hook the reader",
        agent=writer,
        memory=["feedback"],
    )
    server.push_text("It was raining in Darjeeling when the first leaf fell.")

    Ensemble(tasks=[task], memory=store).run()

    shown = next(m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user")
    first = shown.split("<entry", 2)[1]
    assert "the opening paragraph drags" in first
