"""Fixtures for the review tests: asyncio for anyio, free ports, the repository root."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentensemble_review
from agentensemble_review import ReviewServer

# The checkout whose package this process imported: child Pythons must import the same one.
REPO_ROOT = Path(agentensemble_review.__file__).absolute().parent.parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def subprocess_env() -> dict[str, str]:
    """The environment for child Pythons: this checkout first on the import path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    env["PYTHONUNBUFFERED"] = "1"
    return env


PYTHON = sys.executable


@pytest.fixture
def review_server() -> Iterator[ReviewServer]:
    with ReviewServer(port=0, secret="test-secret") as server:
        yield server
