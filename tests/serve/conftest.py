"""Fixtures for the serve tests: asyncio for anyio, and small ensembles on scripted models."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
