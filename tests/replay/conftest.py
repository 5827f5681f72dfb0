"""Replay tests: real provider traffic from other projects' recordings (``corpus/``, sources in
``SOURCES.md``) served by ``replay_server.ReplayServer`` on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from replay_server import ReplayServer, responses


@pytest.fixture
def replay() -> Iterator[Callable[..., ReplayServer]]:
    """``replay("anthropic/thinking_tools")`` starts a server answering with that recording's
    responses (all, or those at the given indices), closed when the test ends."""
    with ExitStack() as stack:

        def start(name: str, *indices: int) -> ReplayServer:
            return stack.enter_context(ReplayServer(responses(name, *indices)))

        yield start
