"""Fixtures for end-to-end tests against a real local OpenAI-compatible server.

Test modules here import the server as ``from openai_server import OpenAIServer, Fault``
(this directory is on ``sys.path``, whatever pytest's import mode).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from openai_server import OpenAIServer  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A fresh scripted server on 127.0.0.1 for one test; shut down afterwards.

    Teardown fails the test if a handler hit an unexpected exception (a broken responder...).
    """
    with OpenAIServer() as server:
        yield server
    assert server.errors == [], f"openai_server handler errors: {server.errors}"
