"""A started web console on a free port of 127.0.0.1 for each test that asks for one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentensemble_web import WebConsoleServer


@pytest.fixture
def console() -> Iterator[WebConsoleServer]:
    with WebConsoleServer(port=0) as server:
        yield server
