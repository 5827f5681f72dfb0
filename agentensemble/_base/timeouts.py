"""Awaiting with a bound: one way on every Python the package supports."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``await awaitable``, or ``TimeoutError`` once ``seconds`` pass: ``asyncio.timeout`` where
    it exists (3.11+: no extra task, unlike ``wait_for``), ``asyncio.wait_for`` on 3.10."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, timeout=seconds)


__all__ = ["within"]
