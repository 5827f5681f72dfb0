"""Fixtures for the MCP tests: asyncio for anyio tests, test servers over loopback HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_helpers import serve


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The streamable-HTTP endpoint of a test server on 127.0.0.1 (one per test module)."""
    yield from serve("http")


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    """The SSE endpoint of a test server on 127.0.0.1."""
    yield from serve("sse")
