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
def tool_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Captures the ``agentensemble`` logger at DEBUG, whatever logging setup ran before."""
    logger = logging.getLogger("agentensemble")
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
        logger.setLevel(level)
        logger.propagate = propagate
