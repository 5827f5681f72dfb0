"""PostgresMemory specifics (the shared contract is in test_memory_store_contract.py)."""

from __future__ import annotations

import socket

import pytest

from agentensemble.memory import PostgresMemory


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_postgres_is_a_one_line_error_without_the_password() -> None:
    url = f"postgresql://app:hunter2-secret@127.0.0.1:{_free_port()}/memory"
    with pytest.raises(ConnectionError) as raised:
        PostgresMemory(url)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("memory store: cannot connect to Postgres at postgresql://app:***@")
    assert "hunter2" not in message


def test_two_stores_create_the_table_once_and_share_it(postgres_url: str) -> None:
    first, second = PostgresMemory(postgres_url), PostgresMemory(postgres_url)
    first.add("team", "the on-call rota changes on Mondays")
    assert [e.text for e in second.search("team", "rota")] == [
        "the on-call rota changes on Mondays"
    ]
    assert second.scopes() == [("team", 1)]
