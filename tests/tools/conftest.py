"""Fixtures for the tool tests: asyncio for anyio tests, and a fresh ToolContext per test."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from agentensemble.tools import ToolContext, use_tool_context


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tool_context() -> Iterator[ToolContext]:
    """A fresh context (own metrics registry, no review handler) for the test's tool calls."""
    with use_tool_context(ToolContext()) as context:
        yield context


@pytest.fixture
def tool_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Captures the ``agentensemble`` logger at DEBUG."""
    caplog.set_level(logging.DEBUG, logger="agentensemble")
    return caplog
