"""The guard in front of both HTTP servers, alone: Host allow-list, bearer token, body bound
(declared and counted), table-driven."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agentensemble.serve._http_guard import HTTPGuard, allowed_host_names, is_loopback

pytestmark = pytest.mark.anyio

TOKEN = "a-guard-token-long-enough"


async def echo(scope: Any, receive: Any, send: Any) -> None:
    """Reads the whole body, answers with its length."""
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def guarded(**settings: Any) -> httpx.AsyncClient:
    app = HTTPGuard(echo, allowed_hosts=allowed_host_names("127.0.0.1"), **settings)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:9")


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:9", 200),
        ("localhost:9", 200),
        ("[::1]:9", 200),
        ("LOCALHOST", 200),
        ("evil.example", 421),
        ("127.0.0.1.evil.example:9", 421),
        ("", 421),
    ],
)
async def test_only_allowed_hosts(host: str, status: int) -> None:
    async with guarded() as client:
        response = await client.post("/", content=b"x", headers={"Host": host})
    assert response.status_code == status


@pytest.mark.parametrize(
    ("authorization", "path", "status"),
    [
        (None, "/", 401),
        ("Bearer wrong", "/", 401),
        (f"bearer {TOKEN}", "/", 401),  # exact scheme and token only
        (f"Bearer {TOKEN}x", "/", 401),
        (f"Bearer {TOKEN}", "/", 200),
        (None, "/.well-known/agent-card.json", 200),  # an open path
    ],
)
async def test_the_token_when_one_is_set(authorization: str | None, path: str, status: int) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    async with guarded(token=TOKEN, open_paths=("/.well-known/agent-card.json",)) as client:
        response = await client.post(path, content=b"x", headers=headers)
    assert response.status_code == status
    assert TOKEN not in response.text


async def test_a_declared_body_over_the_limit_is_refused_unread() -> None:
    async with guarded(max_body_bytes=100) as client:
        ok = await client.post("/", content=b"x" * 100)
        big = await client.post("/", content=b"x" * 101)
    assert (ok.status_code, ok.text) == (200, "100")
    assert big.status_code == 413


async def test_a_chunked_body_is_counted_as_it_arrives() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"x" * 50

    async with guarded(max_body_bytes=100) as client:
        response = await client.post("/", content=chunks())
    assert response.status_code == 413


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("10.0.0.2", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_public_bind_allows_its_own_name_and_the_extra_ones() -> None:
    assert allowed_host_names("10.0.0.2", ["agents.example"]) == {"10.0.0.2", "agents.example"}
    assert "127.0.0.1" not in allowed_host_names("0.0.0.0")
