"""Fixtures for the review tests: asyncio for anyio, a running reference review server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _review_support import SECRET

from agentensemble_review import ReviewServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def review_server() -> Iterator[ReviewServer]:
    """The reference server on a free port of 127.0.0.1, verifying signatures with SECRET."""
    with ReviewServer(port=0, secret=SECRET) as server:
        yield server
