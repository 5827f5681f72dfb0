"""in_worker_thread and cancellation: a body whose caller was cancelled before a worker
picked it up never starts (so a cancelled task's sync tool cannot act afterwards)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from agentensemble._base.threads import DaemonPool
from agentensemble.tools import _sync

pytestmark = pytest.mark.anyio


class HeldPool(DaemonPool):
    """Keeps each job until the test lets it go (a worker that is slow to start)."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Callable[[], Any]] = []

    def run_soon(self, job: Callable[[], Any], label: str = "") -> None:
        self.held.append(job)


def work(job: Callable[[], Any]) -> None:
    """What a pool worker does with a job: run it, then its hand-back (if it returned one)."""
    hand_back = job()
    if hand_back is not None:
        hand_back()


async def test_a_body_cancelled_before_it_started_never_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = HeldPool()
    monkeypatch.setattr(_sync, "daemon_pool", lambda: pool)
    ran: list[str] = []

    call = asyncio.ensure_future(_sync.in_worker_thread(ran.append, "acted"))
    await asyncio.sleep(0)  # the job is handed to the (held) pool
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    (job,) = pool.held
    work(job)  # the worker starts only now

    assert ran == []


async def test_a_body_not_cancelled_runs_and_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = HeldPool()
    monkeypatch.setattr(_sync, "daemon_pool", lambda: pool)

    call = asyncio.ensure_future(_sync.in_worker_thread(str.upper, "done"))
    await asyncio.sleep(0)
    (job,) = pool.held
    work(job)

    assert await asyncio.wait_for(call, 5.0) == "DONE"
